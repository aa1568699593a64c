package jsonl_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// stepsOf opens job id of s for writing and returns its step log.
func stepsOf(t *testing.T, s *jsonl.Store, id string) (store.Job, store.StepLog) {
	t.Helper()
	j, err := s.Open(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	sl, _ := store.StepsOf(j)
	return j, sl
}

// A crash mid-append leaves a torn last line in steps.jsonl: the next
// open cuts it, keeps every whole line, and appends after them on a line
// of their own.
func TestATornLastStepLineIsCutOnOpen(t *testing.T) {
	for _, torn := range []string{`{"_idx":1,"step":{"kind":"ans`, `{"_idx":1,"st` + "\n", "\x00\x00\x00"} {
		t.Run(fmt.Sprintf("%.12q", torn), func(t *testing.T) {
			ctx := t.Context()
			s := &jsonl.Store{Home: t.TempDir()}
			j, err := s.Create(ctx, store.Manifest{Items: 2})
			if err != nil {
				t.Fatal(err)
			}
			sl, _ := store.StepsOf(j)
			if err := sl.AppendSteps(ctx, 1, []byte(`{"a":1}`), []byte(`{"a":2}`)); err != nil {
				t.Fatal(err)
			}
			id, dir := j.Manifest().ID, j.(*jsonl.Job).Dir()
			j.Close()
			path := filepath.Join(dir, "steps.jsonl")
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(torn); err != nil {
				t.Fatal(err)
			}
			f.Close()

			j, sl = stepsOf(t, s, id)
			defer j.Close()
			if err := sl.AppendSteps(ctx, 1, []byte(`{"a":3}`)); err != nil {
				t.Fatal(err)
			}
			got, err := sl.Steps(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 3 || string(got[0]) != `{"a":1}` || string(got[2]) != `{"a":3}` {
				t.Errorf("steps after the torn line %q = %q, want a 1, 2 and 3", torn, got)
			}
			b, _ := os.ReadFile(path)
			if strings.Count(string(b), "\n") != 3 || strings.Contains(string(b), "ans") || strings.Contains(string(b), "\x00") {
				t.Errorf("steps.jsonl after the repair:\n%s\nwant three whole lines and no torn one", b)
			}
		})
	}
}

// A damaged line before the last one is not a crash's doing: opening the
// log says where it is rather than dropping what follows.
func TestADamagedStepLineBeforeTheLastIsAnError(t *testing.T) {
	ctx := t.Context()
	s := &jsonl.Store{Home: t.TempDir()}
	j, err := s.Create(ctx, store.Manifest{Items: 1})
	if err != nil {
		t.Fatal(err)
	}
	id, dir := j.Manifest().ID, j.(*jsonl.Job).Dir()
	j.Close()
	body := `{"_idx":0,"step":{"a":1}}` + "\nnot json\n" + `{"_idx":0,"step":{"a":2}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "steps.jsonl"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	j, sl := stepsOf(t, s, id)
	defer j.Close()
	if _, err := sl.Steps(ctx, 0); err == nil || !strings.Contains(err.Error(), "steps.jsonl:2") {
		t.Errorf("Steps over a damaged line 2: err = %v, want one naming steps.jsonl:2", err)
	}
}

// Appends from many goroutines at once (many items' steps) all land, each
// idx's in its own order, however the group commits fell.
func TestConcurrentStepAppendsLoseNothing(t *testing.T) {
	ctx := t.Context()
	s := &jsonl.Store{Home: t.TempDir()}
	j, err := s.Create(ctx, store.Manifest{Items: 8})
	if err != nil {
		t.Fatal(err)
	}
	sl, _ := store.StepsOf(j)
	const items, each = 8, 25
	var wg sync.WaitGroup
	for idx := range items {
		wg.Go(func() {
			for n := range each {
				if err := sl.AppendSteps(ctx, idx, fmt.Appendf(nil, `{"n":%d}`, n)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	id := j.Manifest().ID
	j.Close()
	j, sl = stepsOf(t, s, id)
	defer j.Close()
	for idx := range items {
		got, err := sl.Steps(ctx, idx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != each {
			t.Fatalf("idx %d has %d steps after a reopen, want %d", idx, len(got), each)
		}
		for n, e := range got {
			if want := fmt.Sprintf(`{"n":%d}`, n); string(e) != want {
				t.Errorf("idx %d step %d = %s, want %s", idx, n, e, want)
			}
		}
	}
}
