package jsonl

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/store"
)

// fillDisk makes the job's results.jsonl a name for /dev/full, where every
// write fails with ENOSPC, as a full disk does.
func fillDisk(t *testing.T, j *Job) {
	t.Helper()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full to stand for a full disk: %v", err)
	}
	if err := os.Remove(j.resultsPath()); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/full", j.resultsPath()); err != nil {
		t.Fatal(err)
	}
	j.writeMu.Lock()
	old := j.results
	j.results = full
	j.identity, _ = full.Stat()
	j.writeMu.Unlock()
	old.Close()
}

// TestAppendAfterAFailedWriteRefusesItsRecords: Append used to buffer a
// record and then return the write error while keeping it, and a failed
// background write was seen by nobody until the end of the run.
func TestAppendAfterAFailedWriteRefusesItsRecords(t *testing.T) {
	s := &Store{Home: t.TempDir(), FlushEvery: 1 << 20, FlushInterval: time.Hour}
	sj, err := s.Create(t.Context(), store.Manifest{})
	if err != nil {
		t.Fatal(err)
	}
	j := sj.(*Job)
	t.Cleanup(func() { _ = j.Close() })
	rec := func(idx int) store.Record { return store.Record{Idx: idx, Output: json.RawMessage(`"x"`)} }
	if err := j.Append(t.Context(), rec(0)); err != nil {
		t.Fatalf("Append before the disk filled: %v", err)
	}
	fillDisk(t, j)

	err = j.Flush(t.Context())
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), j.resultsPath()) {
		t.Fatalf("Flush on a full disk: err = %v, want ENOSPC naming %s", err, j.resultsPath())
	}
	err = j.Append(t.Context(), rec(1))
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append after a failed write: err = %v, want the write's ENOSPC", err)
	}
	j.mu.Lock()
	kept := len(j.pendingIdx)
	j.mu.Unlock()
	if kept != 1 {
		t.Errorf("after a refused Append the buffer holds %d records, want 1 (idx 0, accepted before the failure)", kept)
	}
	if err := j.Flush(t.Context()); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("second Flush on a full disk: err = %v, want ENOSPC again", err)
	}
}

// TestAFullBufferIsWrittenBeforeAppendTakesMore: Append used to take the
// records, then fail to write them, and return the error with the records
// kept: the caller could not tell whether they were saved.
func TestAFullBufferIsWrittenBeforeAppendTakesMore(t *testing.T) {
	s := &Store{Home: t.TempDir(), FlushEvery: 1 << 20, FlushInterval: time.Hour}
	sj, err := s.Create(t.Context(), store.Manifest{})
	if err != nil {
		t.Fatal(err)
	}
	j := sj.(*Job)
	t.Cleanup(func() { _ = j.Close() })
	fillDisk(t, j)
	big := store.Record{Output: json.RawMessage(`"` + strings.Repeat("x", flushBytes) + `"`)}
	// The kick may flush in the background; either way the next Append
	// must see the failure and refuse its record.
	if err := j.Append(t.Context(), big); err != nil {
		t.Fatalf("first Append into an empty buffer: %v", err)
	}
	if err := j.Append(t.Context(), store.Record{Idx: 1}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append once the buffer is full and the disk too: err = %v, want ENOSPC", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, e := range j.pendingIdx {
		if e.idx == 1 {
			t.Errorf("the refused record of idx 1 is in the buffer: it would be written later although Append said it failed")
		}
	}
}
