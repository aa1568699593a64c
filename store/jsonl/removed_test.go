package jsonl_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// TestRemovedJobDirectoryIsNoticedAtTheNextFlush: an open file takes writes
// after its directory is deleted, so a run went on "saving" records nobody
// could find, then wrote an empty --output and suggested resuming a job
// that no longer existed.
func TestRemovedJobDirectoryIsNoticedAtTheNextFlush(t *testing.T) {
	s := &jsonl.Store{Home: t.TempDir()}
	j := createJob(t, s)
	mustAppend(t, j, record(0))
	if err := j.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(j.Dir()); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, j, record(1))
	err := j.Flush(t.Context())
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "removed") {
		t.Fatalf("Flush after the job directory was removed: err = %v, want store.ErrNotFound saying it was removed", err)
	}
	if err := j.Append(t.Context(), record(2)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Append after that: err = %v, want the same error", err)
	}
	if _, err := j.Outcomes(t.Context()); err == nil {
		t.Errorf("Outcomes of a removed job succeeded, want an error (not \"no records\")")
	}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	if err := store.WriteOutput(t.Context(), j, out, store.FormatJSONL, nil); err == nil {
		t.Errorf("WriteOutput of a removed job succeeded")
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("WriteOutput of a removed job left %s (err %v), want no file at all", out, err)
	}
}

// TestMissingLogIsNotAnEmptyJob: a job directory whose results.jsonl is
// gone read as a job with no records.
func TestMissingLogIsNotAnEmptyJob(t *testing.T) {
	s := &jsonl.Store{Home: t.TempDir()}
	j := createJob(t, s)
	mustAppend(t, j, record(0))
	mustClose(t, j)
	if err := os.Remove(resultsPath(j)); err != nil {
		t.Fatal(err)
	}
	r, err := s.OpenReadOnly(t.Context(), j.Manifest().ID)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Outcomes(t.Context()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Outcomes without results.jsonl: err = %v, want store.ErrNotFound", err)
	}
	if err := r.Scan(t.Context(), func(store.Record) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Scan without results.jsonl: err = %v, want store.ErrNotFound", err)
	}
}
