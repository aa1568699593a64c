package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// routedRecord is the part of a record a routed job's test reads.
type routedRecord struct {
	Idx   int    `json:"_idx"`
	Error string `json:"error"`
	Route string `json:"route"`
	Model string `json:"model"`
	Tries []struct {
		Route, Error, Class string
	} `json:"tries"`
}

// TestRoutesExampleFailsOverWithoutAsking runs examples/routes.yaml as it
// ships: route a answers 503 to every call for the whole run. Every item
// succeeds on b, the run never trips (on_trip would stop a run with no
// terminal: exit 3), a's breaker is open at the end, and the records name
// b and show a's 503 in their tries; status groups the outcomes by route.
func TestRoutesExampleFailsOverWithoutAsking(t *testing.T) {
	w := newWorkdir(t)
	w.examples("routes.yaml", "quickstart.jsonl")
	r := w.tenax("run", "routes.yaml", "--output", "out.jsonl")
	if r.code != 0 {
		t.Fatalf("tenax run routes.yaml: exit %d, want 0\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "circuit breaker open") {
		t.Errorf("the run's breaker tripped though route b could serve:\n%s", r.stderr)
	}
	if !strings.Contains(r.stdout+r.stderr, "a: breaker open") {
		t.Errorf("the summary does not show a's breaker open:\n%s%s", r.stdout, r.stderr)
	}
	f, err := os.Open(filepath.Join(w.dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, tried := 0, 0
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
		for _, try := range rec.Tries {
			tried++
			if try.Route != "a" || !strings.HasPrefix(try.Error, "503") || try.Class != "retryable" {
				t.Errorf("item %d: try %+v; want a's 503, retryable", rec.Idx, try)
			}
		}
	}
	if n != 500 || tried == 0 {
		t.Errorf("%d records, %d tries on a; want 500 records and some items that met a's outage first", n, tried)
	}
	if ex := w.tenax("export", jobID(t, r), "--route", "a"); ex.code != 0 || ex.stdout != "" {
		t.Errorf("export --route a: exit %d, %q; want no record (a produced none)", ex.code, ex.stdout)
	}
	if ex := w.tenax("export", jobID(t, r), "--route", "b"); ex.code != 0 || strings.Count(ex.stdout, "\n") != 500 {
		t.Errorf("export --route b: exit %d, %d lines; want b's 500 records", ex.code, strings.Count(ex.stdout, "\n"))
	}
	// A name no route has is refused, as resume --route refuses it; it
	// exported nothing and exited 0.
	if ex := w.tenax("export", jobID(t, r), "--route", "NOSUCH"); ex.code != 2 || !strings.Contains(ex.stderr, `--route "NOSUCH" names no route`) {
		t.Errorf("export --route NOSUCH: exit %d, %q; want exit 2 naming the route", ex.code, ex.stderr)
	}
	st := w.tenax("status", jobID(t, r))
	if st.code != 0 || !strings.Contains(st.stdout, "b: 500 succeeded") || !strings.Contains(st.stdout, "a: 0 succeeded, 0 failed, left by") {
		t.Errorf("tenax status: exit %d, want the outcomes by route\n%s%s", st.code, st.stdout, st.stderr)
	}
}
