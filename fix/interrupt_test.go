package fix_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/fix"
	"github.com/tenaxhq/tenax/heal"
)

// interruptingFixer fixes TestA by writing A.txt, then the run is
// interrupted (Ctrl-C) while it still "works".
type interruptingFixer struct {
	dir    string
	cancel context.CancelFunc
}

func (f interruptingFixer) Fix(ctx context.Context, _ fix.Request) (fix.Answer, error) {
	if err := os.WriteFile(filepath.Join(f.dir, "A.txt"), []byte("ok\n"), 0o644); err != nil {
		return fix.Answer{}, err
	}
	f.cancel()
	<-ctx.Done()
	return fix.Answer{}, ctx.Err()
}

// TestHandEditsWhileInterruptedAreNeverTheFixers: files the user writes
// between an interrupt during the fixer and --resume were recorded as the
// interrupted attempt's edit and, since they made the check worse, reverted
// with it: the user's work deleted. They must be left alone; a run killed
// before it could fix the attempt's end records them (it cannot tell) but
// never reverts them.
func TestHandEditsWhileInterruptedAreNeverTheFixers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// killed drops the "after" snapshot the interrupt took, as a run
		// killed with -9 never takes it.
		killed    bool
		handEdits bool
		wantFiles []string
		wantUser  []string
		wantNote  string
	}{
		{"interrupted, then edited by hand", false, true, []string{"A.txt"}, []string{"U.txt", "V.txt"}, "changed since attempt 1 was interrupted, so yours: U.txt, V.txt"},
		{"interrupted, nothing edited since", false, false, []string{"A.txt"}, nil, ""},
		{"killed, then edited by hand", true, true, []string{"A.txt", "U.txt", "V.txt"}, nil, "attempt 1 was cut short before tenax could record its edit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, map[string]string{"A": "1", "B": "2"})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := r.config(heal.Budget{}, nil)
			cfg.Fixer = interruptingFixer{dir: r.dir, cancel: cancel}
			first, err := fix.Start(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if first.Outcome != fix.OutcomeInterrupted {
				t.Fatalf("outcome %s (%s); want interrupted", first.Outcome, first.Reason)
			}
			statePath := filepath.Join(first.Dir, "state.json")
			if tc.killed {
				dropAfterSnapshot(t, statePath)
			} else if _, err := os.Stat(filepath.Join(first.Dir, "attempts", "0001.patch")); err != nil {
				t.Errorf("the interrupted attempt's patch is not written at the interrupt: %v", err)
			}
			if tc.handEdits {
				// New failing tests: the check gets worse, 2 errors → 3.
				r.write("U.txt", "wip\n", 0o644)
				r.write("V.txt", "wip\n", 0o644)
			}

			var notes []string
			cfg = r.config(heal.Budget{MaxAttempts: 1}, nil)
			cfg.OnEvent = func(e fix.Event) {
				if e.Kind == fix.EventNote {
					notes = append(notes, e.Message)
				}
			}
			res, err := fix.Resume(context.Background(), cfg, first.ID)
			if err != nil {
				t.Fatal(err)
			}
			if tc.handEdits {
				for _, f := range []string{"U.txt", "V.txt"} {
					if got := r.read(f); got != "wip" {
						t.Errorf("%s holds %q after --resume; want the user's wip, untouched", f, got)
					}
				}
			}
			if got := r.read("A.txt"); got != "ok" {
				t.Errorf("A.txt holds %q; want the fixer's ok, kept", got)
			}
			atts := attemptsOf(audit(t, res))
			if len(atts) != 1 {
				t.Fatalf("%d attempt records; want 1", len(atts))
			}
			a := atts[0]
			if a.Reverted {
				t.Errorf("attempt 1 was reverted (%s); a check that judged the user's changes must revert nothing", a.Reason)
			}
			if a.Edit == nil || !slices.Equal(a.Edit.Files, tc.wantFiles) {
				t.Errorf("attempt 1's edit %+v; want the files %v", a.Edit, tc.wantFiles)
			}
			if !slices.Equal(a.UserFiles, tc.wantUser) {
				t.Errorf("attempt 1's user files %v; want %v", a.UserFiles, tc.wantUser)
			}
			if !tc.killed {
				patch, err := os.ReadFile(filepath.Join(res.Dir, "attempts", "0001.patch"))
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(patch), "U.txt") {
					t.Errorf("attempt 1's patch holds the user's U.txt:\n%s", patch)
				}
			}
			switch {
			case tc.wantNote == "" && len(notes) > 0:
				t.Errorf("notes %q; want none when nothing changed since the interrupt", notes)
			case tc.wantNote != "" && (len(notes) != 1 || !strings.Contains(notes[0], tc.wantNote)):
				t.Errorf("notes %q; want one saying %q", notes, tc.wantNote)
			}
		})
	}
}

// dropAfterSnapshot makes state.json what a run killed during the fixer
// leaves: a pending attempt with no "after" snapshot.
func dropAfterSnapshot(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	p, ok := st["pending"].(map[string]any)
	if !ok || p["after_tree"] == nil {
		t.Fatalf("state.json has no pending attempt with an after_tree:\n%s", b)
	}
	delete(p, "after_tree")
	if b, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
