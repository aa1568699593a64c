package jsonl_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

func indexPath(j *jsonl.Job) string { return filepath.Join(j.Dir(), "results.idx") }

// outcomesOf opens the job read-only and returns its outcomes and the idx
// Scan gives.
func outcomesOf(t *testing.T, s *jsonl.Store, id string) (store.Outcomes, []int) {
	t.Helper()
	r, err := s.OpenReadOnly(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	o, err := r.Outcomes(t.Context())
	if err != nil {
		t.Fatalf("Outcomes: %v", err)
	}
	var scanned []int
	if err := r.Scan(t.Context(), func(rec store.Record) error { scanned = append(scanned, rec.Idx); return nil }); err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return o, scanned
}

// TestOutcomesIndexThatIsMissingBehindOrWrongGivesTheLogsAnswer: resume
// reads results.idx instead of the log; whatever happened to the index,
// the answer must be the log's.
func TestOutcomesIndexThatIsMissingBehindOrWrongGivesTheLogsAnswer(t *testing.T) {
	damage := []struct {
		name string
		do   func(t *testing.T, j *jsonl.Job)
	}{
		{"intact", func(*testing.T, *jsonl.Job) {}},
		{"missing", func(t *testing.T, j *jsonl.Job) { must(t, os.Remove(indexPath(j))) }},
		{"behind by three entries", func(t *testing.T, j *jsonl.Job) {
			fi, err := os.Stat(indexPath(j))
			must(t, err)
			must(t, os.Truncate(indexPath(j), fi.Size()-3*16))
		}},
		{"torn entry", func(t *testing.T, j *jsonl.Job) {
			fi, err := os.Stat(indexPath(j))
			must(t, err)
			must(t, os.Truncate(indexPath(j), fi.Size()-5))
		}},
		{"garbage", func(t *testing.T, j *jsonl.Job) {
			must(t, os.WriteFile(indexPath(j), []byte("tenax results 1\n0123456789abcdef"), 0o644))
		}},
		{"log edited by hand: a line removed", func(t *testing.T, j *jsonl.Job) {
			b, err := os.ReadFile(resultsPath(j))
			must(t, err)
			lines := slices.Collect(splitLines(b))
			lines = slices.Delete(lines, 2, 3) // idx 2's only record
			var out []byte
			for _, l := range lines {
				out = append(out, l...)
			}
			must(t, os.WriteFile(resultsPath(j), out, 0o644))
		}},
	}
	for _, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			s := &jsonl.Store{Home: t.TempDir()}
			j := createJob(t, s)
			id := j.Manifest().ID
			for i := range 10 {
				r := record(i)
				if i%3 == 0 {
					r.Output, r.Error, r.Class = nil, "HTTP 422", classify.Item
				}
				mustAppend(t, j, r)
			}
			mustAppend(t, j, record(3)) // a later success wins
			mustClose(t, j)
			d.do(t, j)

			want := func(idx int) store.Outcome {
				switch {
				case idx == 2 && d.name == "log edited by hand: a line removed":
					return store.Pending
				case idx%3 == 0 && idx != 3:
					return store.Failed
				}
				return store.Succeeded
			}
			check := func(when string, extra int) {
				o, scanned := outcomesOf(t, s, id)
				for idx := range 10 {
					if got := o.Get(idx); got != want(idx) {
						t.Errorf("%s: Outcomes.Get(%d) = %v, want %v", when, idx, got, want(idx))
					}
				}
				wantN := 10 + extra
				if d.name == "log edited by hand: a line removed" {
					wantN--
				}
				if len(scanned) != wantN {
					t.Errorf("%s: Scan gave %v, want %d idx", when, scanned, wantN)
				}
			}
			check("read-only, index as damaged", 0)
			// A writer brings the index up to date, and appends to it.
			w, err := s.Open(t.Context(), id)
			must(t, err)
			mustAppend(t, w, record(11))
			mustClose(t, w)
			check("after a writer reopened the job", 1)
			if o, _ := outcomesOf(t, s, id); o.Get(11) != store.Succeeded {
				t.Errorf("the record appended after the repair is %v, want succeeded", o.Get(11))
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func splitLines(b []byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(b) > 0 {
			i := slices.Index(b, '\n')
			if i < 0 {
				yield(b)
				return
			}
			if !yield(b[:i+1]) {
				return
			}
			b = b[i+1:]
		}
	}
}

// TestIndexOfALogCutShortByHandIsCutToo: entries past the log's end stayed
// in results.idx, and a writer appended after them.
func TestIndexOfALogCutShortByHandIsCutToo(t *testing.T) {
	s := &jsonl.Store{Home: t.TempDir()}
	j := createJob(t, s)
	id := j.Manifest().ID
	for i := range 5 {
		mustAppend(t, j, record(i))
	}
	mustClose(t, j)
	b, err := os.ReadFile(resultsPath(j))
	must(t, err)
	lines := slices.Collect(splitLines(b))
	must(t, os.WriteFile(resultsPath(j), slices.Concat(lines[:3]...), 0o644))
	w, err := s.Open(t.Context(), id)
	must(t, err)
	mustAppend(t, w, record(9))
	mustClose(t, w)
	fi, err := os.Stat(indexPath(j))
	must(t, err)
	if want := int64(16 + 4*16); fi.Size() != want {
		t.Errorf("results.idx is %d bytes after the log was cut to 3 lines and one appended, want %d", fi.Size(), want)
	}
	o, scanned := outcomesOf(t, s, id)
	if !slices.Equal(scanned, []int{0, 1, 2, 9}) || o.Get(3) != store.Pending {
		t.Errorf("after the cut: Scan %v, Outcomes.Get(3) %v; want [0 1 2 9] and pending", scanned, o.Get(3))
	}
}

// TestFinishOfAResumeThatRanNothingLeavesFailuresAlone: every resume
// rewrote failures.jsonl, reading and re-encoding every failed record, so a
// resume with nothing to run cost time in proportion to the log's bytes.
func TestFinishOfAResumeThatRanNothingLeavesFailuresAlone(t *testing.T) {
	s := &jsonl.Store{Home: t.TempDir()}
	j := createJob(t, s)
	id := j.Manifest().ID
	bad := record(1)
	bad.Output, bad.Error, bad.Class = nil, "HTTP 422", classify.Item
	mustAppend(t, j, record(0), bad)
	must(t, j.Finish(t.Context()))
	mustClose(t, j)
	failures := filepath.Join(j.Dir(), "failures.jsonl")
	before, err := os.Stat(failures)
	must(t, err)

	w, err := s.Open(t.Context(), id)
	must(t, err)
	must(t, w.Finish(t.Context()))
	mustClose(t, w)
	after, err := os.Stat(failures)
	must(t, err)
	if !os.SameFile(before, after) {
		t.Errorf("a Finish that appended nothing replaced an up-to-date failures.jsonl")
	}

	// A log written after failures.jsonl (a run that crashed before its
	// Finish) makes the next Finish write it again.
	appendToFile(t, resultsPath(j), `{"_idx":0,"input":null,"output":null,"error":"late","class":"item","finished_at":"2024-06-07T08:09:10Z"}`+"\n")
	future := time.Now().Add(time.Hour)
	must(t, os.Chtimes(resultsPath(j), future, future))
	w, err = s.Open(t.Context(), id)
	must(t, err)
	must(t, w.Finish(t.Context()))
	mustClose(t, w)
	b, err := os.ReadFile(failures)
	must(t, err)
	if got := strings.Count(string(b), "\n"); got != 2 || !strings.Contains(string(b), `"late"`) {
		t.Errorf("failures.jsonl after a log newer than it:\n%s\nwant idx 0 (late) and idx 1", b)
	}
}

// TestFinishCopiesLinesAndReencodesHandWrittenOnes: failures.jsonl copies
// tenax's own lines as they are, and a line written otherwise (keys in
// another order) comes out as a record all the same.
func TestFinishCopiesLinesAndReencodesHandWrittenOnes(t *testing.T) {
	s := &jsonl.Store{Home: t.TempDir()}
	j := createJob(t, s)
	id := j.Manifest().ID
	bad := record(0)
	bad.Output, bad.Error, bad.Class = nil, "HTTP 422", classify.Item
	mustAppend(t, j, bad)
	mustClose(t, j)
	appendToFile(t, resultsPath(j), `{"error":"by hand","class":"item","_idx":1,"finished_at":"2024-06-07T08:09:10Z"}`+"\n")
	w, err := s.Open(t.Context(), id)
	must(t, err)
	must(t, w.Finish(t.Context()))
	mustClose(t, w)
	b, err := os.ReadFile(filepath.Join(j.Dir(), "failures.jsonl"))
	must(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	want0, err := bad.AppendJSON(nil)
	must(t, err)
	if len(lines) != 2 || lines[0] != string(want0) || !strings.HasPrefix(lines[1], `{"_idx":1,`) || !strings.Contains(lines[1], `"error":"by hand"`) {
		t.Errorf("failures.jsonl:\n%s\nwant idx 0's line as written and idx 1 re-encoded with _idx first", b)
	}
}

// TestARecordPastTheLastItemIsRefused: a record with _idx 3 appended to the
// log of a 3-item job was taken as a fourth item ("4 succeeded" of 3, and
// exported). Readers refuse it, naming the line; through the index or
// the log alike.
func TestARecordPastTheLastItemIsRefused(t *testing.T) {
	for _, indexed := range []bool{false, true} {
		s := &jsonl.Store{Home: t.TempDir()}
		sj, err := s.Create(t.Context(), store.Manifest{Created: created, Items: 3})
		must(t, err)
		j := sj.(*jsonl.Job)
		mustAppend(t, j, record(0), record(1), record(2))
		mustClose(t, j)
		appendToFile(t, resultsPath(j), `{"_idx":3,"input":null,"output":"extra","finished_at":"2024-06-07T08:09:10Z"}`+"\n")
		if indexed {
			// A writer adds the line to the index.
			w, err := s.Open(t.Context(), j.Manifest().ID)
			must(t, err)
			mustClose(t, w)
		}
		r, err := s.OpenReadOnly(t.Context(), j.Manifest().ID)
		must(t, err)
		_, err = r.Outcomes(t.Context())
		serr := r.Scan(t.Context(), func(store.Record) error { return nil })
		r.Close()
		for what, err := range map[string]error{"Outcomes": err, "Scan": serr} {
			var ce *jsonl.CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "its _idx 3 is past the job's last item (3 items, idx 0 to 2)") {
				t.Errorf("indexed %v: %s: %v; want the line with _idx 3 refused", indexed, what, err)
			}
		}
	}
}
