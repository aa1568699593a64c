package fix_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/fix"
	"github.com/tenaxhq/tenax/heal"
)

// statusFixer writes the run's status while it works, as `tenax status`
// from another terminal would.
type statusFixer struct {
	home   string
	status string
	resume error
	cfg    fix.Config
}

func (f *statusFixer) Fix(ctx context.Context, r fix.Request) (fix.Answer, error) {
	st, err := fix.OpenStore(f.home, r.Run)
	if err != nil {
		return fix.Answer{}, err
	}
	state, err := st.Load()
	if err != nil {
		return fix.Answer{}, err
	}
	var b strings.Builder
	if err := fix.WriteStatus(&b, st.Dir, state); err != nil {
		return fix.Answer{}, err
	}
	f.status = b.String()
	_, f.resume = fix.Resume(ctx, f.cfg, r.Run)
	return fix.Answer{}, nil
}

// A fix run killed with -9 showed `running` for ever in `tenax status`
// (jobs say `stale`): nothing told a dead run from one at work. A run now
// holds a lock the kernel drops when its process dies; and a second
// process cannot resume a run at work.
func TestAKilledFixRunShowsStale(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1"})
	f := &statusFixer{home: r.home}
	cfg := r.config(heal.Budget{MaxAttempts: 1}, nil)
	cfg.Fixer = f
	f.cfg = cfg
	res, err := fix.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.status, ": running") {
		t.Errorf("the status of a run at work:\n%s", f.status)
	}
	if f.resume == nil || !strings.Contains(f.resume.Error(), "in use by") {
		t.Errorf("resuming a run at work: %v; want it refused as in use", f.resume)
	}

	// What a kill -9 leaves: a state that says running, and no holder.
	path := filepath.Join(res.Dir, "state.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	raw["outcome"] = fix.OutcomeRunning
	b, _ = json.Marshal(raw)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := fix.OpenStore(r.home, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	state, err := st.Load()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := fix.WriteStatus(&out, st.Dir, state); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), ": stale: ") || !strings.Contains(out.String(), "tenax fix --resume "+res.ID) {
		t.Errorf("the status of a killed run:\n%s\nwant stale, and how to resume", out.String())
	}
}
