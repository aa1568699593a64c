package jsonl_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

var created = time.Date(2024, 6, 7, 8, 9, 10, 0, time.UTC)

func createJob(t testing.TB, s *jsonl.Store) *jsonl.Job {
	t.Helper()
	// Items covers every idx the tests and benchmarks append (a record
	// past the job's items is refused as damage).
	j, err := s.Create(t.Context(), store.Manifest{Created: created, Items: 1 << 24})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j.(*jsonl.Job)
}

func record(idx int) store.Record {
	return store.Record{
		Idx:        idx,
		ID:         "item-" + strconv.Itoa(idx),
		Input:      json.RawMessage(`{"text":"hello"}`),
		Output:     json.RawMessage(`{"es":"hola"}`),
		Attempts:   1,
		FinishedAt: created,
	}
}

func mustAppend(t testing.TB, j store.Job, recs ...store.Record) {
	t.Helper()
	if err := j.Append(t.Context(), recs...); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func mustClose(t testing.TB, j store.Job) {
	t.Helper()
	if err := j.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func resultsPath(j *jsonl.Job) string { return filepath.Join(j.Dir(), "results.jsonl") }

// seen opens the job read-only and returns the idx Scan gives and how many
// idx Outcomes has a record for.
func seen(t *testing.T, s *jsonl.Store, id string) (scanned []int, withOutcome int) {
	t.Helper()
	j, err := s.OpenReadOnly(t.Context(), id)
	if err != nil {
		t.Fatalf("OpenReadOnly(%s): %v", id, err)
	}
	defer j.Close()
	if err := j.Scan(t.Context(), func(r store.Record) error {
		scanned = append(scanned, r.Idx)
		return nil
	}); err != nil {
		t.Fatalf("Scan: %v", err)
	}
	o, err := j.Outcomes(t.Context())
	if err != nil {
		t.Fatalf("Outcomes: %v", err)
	}
	succ, fail, _ := o.Count(len(o))
	return scanned, succ + fail
}

func TestTornLastLineIsIgnoredAndTheNextAppendSurvivesReopen(t *testing.T) {
	cases := []struct {
		name     string
		tail     string
		wantKept int // records of the first three plus the tail that survive
	}{
		{"torn mid-record", `{"_idx":3,"id":"item-3","input":{"te`, 3},
		{"torn inside a nested string", `{"_idx":3,"input":{"text":"a \"quote\"`, 3},
		{"garbage", "\x00\x00\x00", 3},
		{"whole record without its newline", `{"_idx":3,"input":null,"output":1,"finished_at":"2024-06-07T08:09:10Z"}`, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &jsonl.Store{Home: t.TempDir()}
			j := createJob(t, s)
			id := j.Manifest().ID
			mustAppend(t, j, record(0), record(1), record(2))
			mustClose(t, j)
			appendToFile(t, resultsPath(j), tc.tail)

			if scanned, n := seen(t, s, id); len(scanned) != tc.wantKept || n != tc.wantKept {
				t.Errorf("read-only over a log ending in %q: Scan gave %v, Outcomes %d records; want %d",
					tc.tail, scanned, n, tc.wantKept)
			}
			w, err := s.Open(t.Context(), id)
			if err != nil {
				t.Fatalf("Open for writing over a torn log: %v", err)
			}
			mustAppend(t, w, record(7))
			mustClose(t, w)
			scanned, n := seen(t, s, id)
			if len(scanned) != tc.wantKept+1 || scanned[len(scanned)-1] != 7 || n != tc.wantKept+1 {
				t.Errorf("after repairing and appending idx 7: Scan gave %v, Outcomes %d records; want the %d kept and 7",
					scanned, n, tc.wantKept)
			}
		})
	}
}

func appendToFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCrashAtEveryByteOfTheLastRecordLosesOnlyThatRecord cuts the log at
// every byte of its last record, as a crash mid-write would, and checks
// that exactly the complete records are seen, then that the job resumes.
func TestCrashAtEveryByteOfTheLastRecordLosesOnlyThatRecord(t *testing.T) {
	const n = 4
	s := &jsonl.Store{Home: t.TempDir()}
	j := createJob(t, s)
	last := record(n - 1)
	last.Error, last.Class = "bad \"item\"\n", classify.Item
	last.Output = json.RawMessage(`{"nested":[{"a":"}"},"]"]}`)
	mustAppend(t, j, record(0), record(1), record(2), last)
	mustClose(t, j)
	full, err := os.ReadFile(resultsPath(j))
	if err != nil {
		t.Fatal(err)
	}
	lastStart := bytes.LastIndexByte(full[:len(full)-1], '\n') + 1
	id := j.Manifest().ID
	for cut := lastStart; cut <= len(full); cut++ {
		if err := os.WriteFile(resultsPath(j), full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		want := n - 1
		if cut >= len(full)-1 { // only the newline, or nothing, is missing
			want = n
		}
		if scanned, got := seen(t, s, id); len(scanned) != want || got != want {
			t.Errorf("log cut at byte %d of %d: Scan gave %v, Outcomes %d records; want %d", cut, len(full), scanned, got, want)
			continue
		}
		w, err := s.Open(t.Context(), id)
		if err != nil {
			t.Fatalf("log cut at byte %d: Open for writing: %v", cut, err)
		}
		mustAppend(t, w, record(9))
		mustClose(t, w)
		if scanned, got := seen(t, s, id); len(scanned) != want+1 || got != want+1 {
			t.Errorf("log cut at byte %d, then one more record appended: Scan gave %v, Outcomes %d records; want %d",
				cut, scanned, got, want+1)
		}
	}
}

func TestDamagedLineBeforeTheLastIsACorruptError(t *testing.T) {
	cases := map[string]string{
		"not JSON":            "hello\n",
		"no _idx":             `{"id":"x"}` + "\n",
		"negative _idx":       `{"_idx":-1}` + "\n",
		"string _idx":         `{"_idx":"1"}` + "\n",
		"torn then continued": `{"_idx":5,"out` + "\n",
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			s := &jsonl.Store{Home: t.TempDir()}
			j := createJob(t, s)
			mustAppend(t, j, record(0))
			mustClose(t, j)
			appendToFile(t, resultsPath(j), bad)
			appendToFile(t, resultsPath(j), `{"_idx":2}`+"\n")
			r, err := s.OpenReadOnly(t.Context(), j.Manifest().ID)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			_, err = r.Outcomes(t.Context())
			var ce *jsonl.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Outcomes over a log with a damaged line 2: err = %v, want a *jsonl.CorruptError", err)
			}
			if ce.Line != 2 || !strings.Contains(err.Error(), "results.jsonl:2") {
				t.Errorf("CorruptError says line %d (%v), want line 2", ce.Line, err)
			}
		})
	}
}

func TestOutcomesMemoryGrowsWithItemsNotBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 40 MB log")
	}
	const items, outputSize = 10_000, 4 << 10
	s := &jsonl.Store{Home: t.TempDir(), FlushEvery: 1000}
	j := createJob(t, s)
	big := json.RawMessage(`"` + strings.Repeat("x", outputSize) + `"`)
	for i := range items {
		r := record(i)
		r.Output = big
		mustAppend(t, j, r)
	}
	mustClose(t, j)
	r, err := s.OpenReadOnly(t.Context(), j.Manifest().ID)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	o, err := r.Outcomes(t.Context())
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("Outcomes: %v", err)
	}
	if succ, _, _ := o.Count(items); succ != items {
		t.Fatalf("Outcomes counted %d succeeded, want %d", succ, items)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	logBytes := uint64(items * outputSize)
	// A byte per item (doubled while the slice grows), the read buffer and
	// a few small values: far below what the outputs weigh.
	if limit := uint64(4*items + 128<<10); allocated > limit {
		t.Errorf("Outcomes of %d items (%d MB of outputs) allocated %d bytes, want at most %d",
			items, logBytes>>20, allocated, limit)
	}
}

func TestSecondWriterIsRefusedWhileTheFirstHoldsTheJob(t *testing.T) {
	s := &jsonl.Store{Home: t.TempDir()}
	j := createJob(t, s)
	id := j.Manifest().ID
	_, err := s.Open(t.Context(), id)
	var inUse *jsonl.InUseError
	if !errors.Is(err, store.ErrInUse) || !errors.As(err, &inUse) {
		t.Fatalf("Open while the job is open for writing: err = %v, want a *jsonl.InUseError matching store.ErrInUse", err)
	}
	want := fmt.Sprintf("job %s is in use by another tenax process (pid %d)", id, os.Getpid())
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	r, err := s.OpenReadOnly(t.Context(), id)
	if err != nil {
		t.Fatalf("OpenReadOnly while the job is open for writing: %v", err)
	}
	mustClose(t, r)
	mustClose(t, j)
	again, err := s.Open(t.Context(), id)
	if err != nil {
		t.Fatalf("Open after the writer closed: %v", err)
	}
	mustClose(t, again)
}

// TestMain runs the test binary as the helper process of
// TestSecondWriterInAnotherProcessIsRefused when asked to.
func TestMain(m *testing.M) {
	if home := os.Getenv("TENAX_TEST_HOLD_HOME"); home != "" {
		holdJob(home, os.Getenv("TENAX_TEST_HOLD_ID"))
		return
	}
	os.Exit(m.Run())
}

// holdJob opens a job for writing and holds it until stdin closes.
func holdJob(home, id string) {
	s := &jsonl.Store{Home: home}
	j, err := s.Open(context.Background(), id)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("holding")
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = j.Close()
}

func TestSecondWriterInAnotherProcessIsRefused(t *testing.T) {
	s := &jsonl.Store{Home: t.TempDir()}
	j := createJob(t, s)
	id := j.Manifest().ID
	mustClose(t, j)

	cmd := exec.CommandContext(t.Context(), os.Args[0])
	cmd.Env = append(os.Environ(), "TENAX_TEST_HOLD_HOME="+s.Home, "TENAX_TEST_HOLD_ID="+id)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "holding") {
		if strings.HasPrefix(sc.Text(), "error:") {
			t.Fatalf("helper process could not open the job: %s", sc.Text())
		}
	}
	_, err = s.Open(t.Context(), id)
	want := fmt.Sprintf("job %s is in use by another tenax process (pid %d)", id, cmd.Process.Pid)
	if err == nil || err.Error() != want {
		t.Errorf("Open while another process holds the job: err = %v, want %q", err, want)
	}
	go io.Copy(io.Discard, stdout)
}

// TestFlushEveryWritesAfterThatManyRecords: every FlushEvery records the
// background flusher writes and fsyncs them (a group commit: the appender
// does not wait for the disk).
func TestFlushEveryWritesAfterThatManyRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &jsonl.Store{Home: t.TempDir(), FlushEvery: 3, FlushInterval: time.Hour}
		j := createJob(t, s)
		defer j.Close()
		for i, wantLines := range []int{0, 0, 3, 3, 3, 6} {
			mustAppend(t, j, record(i))
			synctest.Wait() // the flusher has done what it was asked
			if got := linesIn(t, resultsPath(j)); got != wantLines {
				t.Errorf("after %d appends with FlushEvery 3 the file has %d lines, want %d", i+1, got, wantLines)
			}
		}
	})
}

func TestFlushIntervalWritesWithoutAFlushCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &jsonl.Store{Home: t.TempDir(), FlushEvery: 1000, FlushInterval: 2 * time.Second}
		j := createJob(t, s)
		defer j.Close()
		mustAppend(t, j, record(0))
		time.Sleep(time.Second)
		synctest.Wait()
		if got := linesIn(t, resultsPath(j)); got != 0 {
			t.Errorf("one second into a two-second interval the file has %d lines, want 0", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := linesIn(t, resultsPath(j)); got != 1 {
			t.Errorf("after the two-second interval the file has %d lines, want 1", got)
		}
	})
}

func linesIn(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

func TestFinishWritesFailuresFile(t *testing.T) {
	s := &jsonl.Store{Home: t.TempDir()}
	j := createJob(t, s)
	fail := func(idx int, msg string) store.Record {
		r := record(idx)
		r.Output, r.Error, r.Class = nil, msg, classify.Item
		return r
	}
	mustAppend(t, j, fail(4, "four"), fail(1, "one"), record(2), fail(0, "zero, then fixed"), record(0))
	if err := j.Finish(t.Context()); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(j.Dir(), "failures.jsonl"))
	if err != nil {
		t.Fatalf("failures.jsonl after Finish: %v", err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r store.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("failures.jsonl line %q: %v", line, err)
		}
		got = append(got, fmt.Sprintf("%d:%s", r.Idx, r.Error))
	}
	if want := []string{"1:one", "4:four"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("failures.jsonl holds %v, want %v", got, want)
	}
}

func TestAppendDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	s := &jsonl.Store{Home: t.TempDir(), FlushEvery: 1 << 30, FlushInterval: time.Hour}
	j := createJob(t, s)
	rec := record(1)
	mustAppend(t, j, rec) // grow the buffer once
	allocs := testing.AllocsPerRun(1000, func() {
		if err := j.Append(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Errorf("Append of one record allocates %.2f times, want 0", allocs)
	}
}

func TestStoreWithoutHomeFails(t *testing.T) {
	var s jsonl.Store
	if _, err := s.Create(t.Context(), store.Manifest{}); err == nil || !strings.Contains(err.Error(), "Home") {
		t.Errorf("Create on a Store without Home: err = %v, want one naming Home", err)
	}
}

// TestHolderTellsARunningJobFromAStaleOne: a job held open names its
// process; once closed, or once its process is gone, it is held by nobody,
// which status shows as stale when the manifest still says running.
func TestHolderTellsARunningJobFromAStaleOne(t *testing.T) {
	s := &jsonl.Store{Home: t.TempDir()}
	j, err := s.Create(t.Context(), store.Manifest{State: store.StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	id := j.Manifest().ID
	h, err := s.Holder(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Held || h.PID != os.Getpid() || h.Host == "" {
		t.Errorf("open job: holder %+v, want held by pid %d with a host", h, os.Getpid())
	}
	mustClose(t, j)
	if h, err = s.Holder(t.Context(), id); err != nil || h.Held {
		t.Errorf("closed job: holder %+v, %v; want held by nobody", h, err)
	}
	// A process that died holding the job: its pid is written, its flock
	// is gone with it.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	lock := filepath.Join(s.Home, "jobs", id, "lock")
	if err := os.WriteFile(lock, fmt.Appendf(nil, "%d %s\n", dead.Process.Pid, host), 0o644); err != nil {
		t.Fatal(err)
	}
	if h, err = s.Holder(t.Context(), id); err != nil || h.Held || h.PID != dead.Process.Pid {
		t.Errorf("job of a dead process: holder %+v, %v; want pid %d, not held", h, err, dead.Process.Pid)
	}
	// A holder on another host: the flock answers.
	if err := os.WriteFile(lock, []byte("1 elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if h, err = s.Holder(t.Context(), id); err != nil || h.Held || h.Host != "elsewhere" {
		t.Errorf("unlocked job of another host: holder %+v, %v; want not held", h, err)
	}
	again, err := s.Open(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, again)
	if err := os.WriteFile(lock, []byte("1 elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if h, err = s.Holder(t.Context(), id); err != nil || !h.Held {
		t.Errorf("locked job of another host: holder %+v, %v; want held", h, err)
	}
}
