package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/batch"
)

// TestRoutesBatchExampleFailsOverToTheNextRoutesBatch runs
// examples/routes-batch.yaml as it ships: route a's batch API errors every
// request. Wave 1 is a's batch, wave 2 b's; the run never trips, every
// record names b and shows a's 500 in its tries, and the ledger names the
// route of each batch.
func TestRoutesBatchExampleFailsOverToTheNextRoutesBatch(t *testing.T) {
	w := newWorkdir(t)
	w.examples("routes-batch.yaml", "quickstart.jsonl")
	r := w.tenax("run", "routes-batch.yaml", "--output", "out.jsonl")
	if r.code != 0 {
		t.Fatalf("tenax run routes-batch.yaml: exit %d, want 0\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "circuit breaker open") {
		t.Errorf("the run's breaker tripped though route b could serve:\n%s", r.stderr)
	}
	t.Logf("summary:\n%s", r.stdout)
	f, err := os.Open(filepath.Join(w.dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec routedRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("bad record %q: %v", sc.Text(), err)
		}
		n++
		if rec.Error != "" || rec.Route != "b" || rec.Model != "mock-json" {
			t.Errorf("item %d: route %q model %q error %q; want success on b (mock-json)", rec.Idx, rec.Route, rec.Model, rec.Error)
		}
		if len(rec.Tries) != 1 || rec.Tries[0].Route != "a" || !strings.Contains(rec.Tries[0].Error, "500") || rec.Tries[0].Class != "retryable" {
			t.Errorf("item %d: tries %+v; want a's 500, retryable", rec.Idx, rec.Tries)
		}
	}
	if n != 500 {
		t.Errorf("%d records, want 500", n)
	}
	onRoute := map[string]int{}
	for _, e := range w.ledger(jobID(t, r)) {
		if e.Kind == batch.KindSubmitted {
			onRoute[e.Route] += len(e.CustomIDs)
		}
	}
	if onRoute["a"] != 500 || onRoute["b"] != 500 || len(onRoute) != 2 {
		t.Errorf("requests submitted by route: %v; want 500 on a (wave 1) and 500 on b (wave 2)", onRoute)
	}
}
