package main

import (
	"strings"
	"testing"
)

// TestEnqueueOnlyPrintsAWorkerCommandThatCanBePasted: tenax run --workers 0
// printed "Run it with: tenax worker --store … --job ID", a literal "…"
// where the store goes. It prints the store (its password hidden, quoted
// for the shell) and the job's id.
func TestEnqueueOnlyPrintsAWorkerCommandThatCanBePasted(t *testing.T) {
	pg := postgresStore(t)
	w := fixLaterWorkdir(t)
	r := w.tenax("run", "job.yaml", "--store", pg, "--workers", "0")
	if r.code != 0 {
		t.Fatalf("run --workers 0: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := jobID(t, r)
	want := "Run it with: tenax worker --store '" + pg + "' --job " + id + "\n"
	if !strings.HasSuffix(r.stdout, want) {
		t.Errorf("run --workers 0 printed\n%s\nwant it to end with\n%s", r.stdout, want)
	}
}
