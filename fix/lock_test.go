package fix_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/fix"
	"github.com/tenaxhq/tenax/heal"
	texec "github.com/tenaxhq/tenax/task/exec"
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

// A fix run's check or fixer outlived kill -9 of tenax fix in what it had
// started (a test binary, an agent), editing the tree beside the resumed
// run. The run records its process groups; a resume ends those a killed
// run left, when their processes still carry that run's token.
func TestAResumedFixRunEndsWhatAKilledRunLeft(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("needs /proc")
	}
	r := newRepo(t, map[string]string{"A": "1"})
	cfg := r.config(heal.Budget{MaxAttempts: 1}, map[string]string{"STUBBORN": "A"})
	res, err := fix.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// What a killed run leaves: a group its record names, still running.
	left := exec.Command("sleep", "300")
	left.Env = append(os.Environ(), texec.EnvRun+"=killedrun")
	left.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- left.Wait() }()
	defer func() { _ = left.Process.Kill() }()
	f, err := os.OpenFile(filepath.Join(res.Dir, "process-groups"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(f, "run killedrun\n+%d\n", left.Process.Pid); err != nil {
		t.Fatal(err)
	}
	f.Close()

	var notes []string
	cfg.OnEvent = func(e fix.Event) {
		if e.Kind == fix.EventNote {
			notes = append(notes, e.Message)
		}
	}
	if _, err := fix.Resume(context.Background(), cfg, res.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		t.Fatal("the killed run's process still runs after the resume")
	}
	if len(notes) == 0 || !strings.Contains(notes[0], "ended 1 process group") {
		t.Errorf("notes %q; want one saying the group was ended", notes)
	}
}
