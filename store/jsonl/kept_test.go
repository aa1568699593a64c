package jsonl_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// TestAWritersOutcomesAreTheLogsAfterEveryChange: a writer keeps what its
// last Outcomes read and gives it again while its log has not grown, so a
// resume that runs nothing reads its index once, not twice. Whatever came
// between two reads, the second must be what a reader opened afresh reads
// of the log (the slow path), or the same error: records appended, the
// item count raised, the caller's copy changed, a damaged line, the log
// replaced by another file.
func TestAWritersOutcomesAreTheLogsAfterEveryChange(t *testing.T) {
	between := []struct {
		name string
		do   func(t *testing.T, j *jsonl.Job, first store.Outcomes)
	}{
		{"nothing", func(*testing.T, *jsonl.Job, store.Outcomes) {}},
		{"the caller's copy changed", func(_ *testing.T, _ *jsonl.Job, first store.Outcomes) {
			first.Set(1, store.Failed)
			first.Set(40, store.Succeeded)
		}},
		{"records appended", func(t *testing.T, j *jsonl.Job, _ store.Outcomes) {
			mustAppend(t, j, record(12))
			r := record(1)
			r.Output, r.Error, r.Class = nil, "HTTP 500", classify.Retryable
			mustAppend(t, j, r)
			must(t, j.Flush(t.Context()))
		}},
		{"the item count raised", func(t *testing.T, j *jsonl.Job, _ store.Outcomes) {
			must(t, j.UpdateManifest(t.Context(), func(m *store.Manifest) { m.Items = 20 }))
		}},
		{"the log replaced by another file", func(t *testing.T, j *jsonl.Job, _ store.Outcomes) {
			b, err := os.ReadFile(resultsPath(j))
			must(t, err)
			b[len(`{"_idx":`)] = '7' // the same size, idx 0 now idx 7
			tmp := resultsPath(j) + ".new"
			must(t, os.WriteFile(tmp, b, 0o644))
			must(t, os.Rename(tmp, resultsPath(j)))
		}},
	}
	for _, c := range between {
		t.Run(c.name, func(t *testing.T) {
			s := &jsonl.Store{Home: t.TempDir()}
			created, err := s.Create(t.Context(), store.Manifest{Created: created, Items: 10})
			must(t, err)
			j := created.(*jsonl.Job)
			t.Cleanup(func() { _ = j.Close() })
			for i := range 6 {
				r := record(i)
				if i%3 == 0 {
					r.Output, r.Error, r.Class = nil, "HTTP 422", classify.Item
				}
				mustAppend(t, j, r)
			}
			first, err := j.Outcomes(t.Context())
			must(t, err)
			c.do(t, j, first)
			got, gotErr := j.Outcomes(t.Context())
			fresh, err := s.OpenReadOnly(t.Context(), j.Manifest().ID)
			must(t, err)
			defer fresh.Close()
			want, wantErr := fresh.Outcomes(t.Context())
			if fmt.Sprint(got, gotErr) != fmt.Sprint(want, wantErr) {
				t.Fatalf("after %s the writer's Outcomes are %v (%v); a reader opened afresh reads %v (%v)", c.name, got, gotErr, want, wantErr)
			}
		})
	}
}

// TestADamagedLogIsRefusedOnEveryRead: Outcomes that failed are not kept,
// so a writer whose log holds a damaged line refuses it again on the next
// read.
func TestADamagedLogIsRefusedOnEveryRead(t *testing.T) {
	s := &jsonl.Store{Home: t.TempDir()}
	j := createJob(t, s)
	id := j.Manifest().ID
	mustAppend(t, j, record(0))
	mustAppend(t, j, record(1))
	mustClose(t, j)
	f, err := os.OpenFile(filepath.Join(s.Home, "jobs", id, "results.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString("{\"_idx\":2,\"output\":\"\x01\"}\n{\"_idx\":3}\n")
	must(t, err)
	must(t, f.Close())
	w, err := s.Open(t.Context(), id)
	if err != nil {
		t.Skipf("the writer refuses the damaged log at open: %v", err)
	}
	defer w.Close()
	for i := range 2 {
		if o, err := w.Outcomes(t.Context()); err == nil {
			t.Fatalf("read %d of a log with a control byte in a line: %v, want it refused", i+1, o)
		}
	}
}

// TestAWriterOpenedWithoutAnIndexReadsWhatAReaderReads: a writer that
// rebuilds results.idx as it opens keeps the outcomes of the lines it
// indexed, for its first Outcomes; they must be what a reader opened
// afresh reads, or the same refusal: a later record of an idx, an idx
// past the job's items (refused), the index there or not.
func TestAWriterOpenedWithoutAnIndexReadsWhatAReaderReads(t *testing.T) {
	cases := []struct {
		name        string
		items       int
		removeIndex bool
	}{
		{"index rebuilt", 10, true},
		{"index rebuilt, a record past the items", 4, true},
		{"index rebuilt, no item count", 0, true},
		{"index brought up to date", 10, false},
		{"index brought up to date, a record past the items", 4, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &jsonl.Store{Home: t.TempDir()}
			j := createJob(t, s)
			id := j.Manifest().ID
			for _, i := range []int{0, 1, 2, 1, 5, 3} {
				r := record(i)
				if i == 2 {
					r.Output, r.Error, r.Class = nil, "HTTP 422", classify.Item
				}
				mustAppend(t, j, r)
			}
			must(t, j.UpdateManifest(t.Context(), func(m *store.Manifest) { m.Items = c.items }))
			mustClose(t, j)
			if c.removeIndex {
				must(t, os.Remove(filepath.Join(s.Home, "jobs", id, "results.idx")))
			}
			w, err := s.Open(t.Context(), id)
			must(t, err)
			defer w.Close()
			got, gotErr := w.Outcomes(t.Context())
			r, err := s.OpenReadOnly(t.Context(), id)
			must(t, err)
			defer r.Close()
			want, wantErr := r.Outcomes(t.Context())
			if fmt.Sprint(got, gotErr) != fmt.Sprint(want, wantErr) {
				t.Fatalf("the writer's first Outcomes are %v (%v); a reader opened afresh reads %v (%v)", got, gotErr, want, wantErr)
			}
		})
	}
}
