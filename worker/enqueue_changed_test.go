package worker_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/input"
	"github.com/tenaxhq/tenax/job"
)

// TestAnInputChangedBeforeItIsEnqueuedIsNeverStoredInPart: tenax run with
// a PostgreSQL store read the input again to enqueue it, unchecked: an
// input rewritten between the job's scan and the enqueue was stored for
// the workers under the old input's hash, as a run on one machine did
// before it checked its reads. The enqueue now reads the input checked
// block by block against the scan the job hashed (input.OpenScanned): it
// stops with input.ErrChanged at the changed block, and no item of it is
// stored.
func TestAnInputChangedBeforeItIsEnqueuedIsNeverStoredInPart(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 40000 // about 1.7 MB: two blocks of input.BlockBytes
	specPath := writeJob(t, n, "")
	cr, err := job.Create(t.Context(), specPath, c.Store(), job.Options{Home: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatalf("creating the job: %v", err)
	}
	defer cr.Job.Close()
	in := filepath.Join(filepath.Dir(specPath), "items.jsonl")
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) <= input.BlockBytes {
		t.Fatalf("the input is %d bytes, want more than one block", len(data))
	}
	// Rewritten in place, the same size: the second block's words change.
	tail := bytes.ReplaceAll(data[input.BlockBytes:], []byte("word"), []byte("WORD"))
	if err := os.WriteFile(in, append(data[:input.BlockBytes:input.BlockBytes], tail...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = c.Enqueue(t.Context(), cr)
	if !errors.Is(err, input.ErrChanged) {
		t.Fatalf("enqueueing a rewritten input: %v, want input.ErrChanged", err)
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var stored, changed int
	if err := conn.QueryRow(t.Context(), `SELECT count(*), count(*) FILTER (WHERE position('WORD'::bytea in input) > 0)
		FROM tenax_inputs WHERE job_id = $1`, cr.Job.Manifest().ID).Scan(&stored, &changed); err != nil {
		t.Fatal(err)
	}
	if changed != 0 || stored >= n {
		t.Errorf("%d items stored, %d of them from the rewritten part; want only items of the unchanged first block, none changed", stored, changed)
	}
}
