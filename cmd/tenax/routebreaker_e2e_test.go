package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestStatusShowsTheRoutesFaultsAndRefusalsOfAFinishedRun runs
// examples/routes.yaml, whose route a answers 503 to every call: each of a's calls is a fault
// of its breaker, which opens and refuses what is sent to it after. A
// refused call leaves no record, so status can say these only from what
// the run kept in the manifest: the text's route line and --json's
// routes[] carry the same counts as the run's summary, and the faults
// are the calls the summary says a made.
func TestStatusShowsTheRoutesFaultsAndRefusalsOfAFinishedRun(t *testing.T) {
	w := newWorkdir(t)
	w.examples("routes.yaml", "quickstart.jsonl")
	r := w.tenax("run", "routes.yaml")
	if r.code != 0 {
		t.Fatalf("tenax run: exit %d, want 0\n%s", r.code, r.stderr)
	}
	m := regexp.MustCompile(`a: breaker open, (\d+) calls, 0 succeeded, 0 failed \(breaker: (\d+) fault\(s\), (\d+) refused\)`).FindStringSubmatch(r.stdout + r.stderr)
	if m == nil {
		t.Fatalf("the run's summary does not say a's breaker opened, its calls and what its breaker counted:\n%s%s", r.stdout, r.stderr)
	}
	calls, _ := strconv.Atoi(m[1])
	if m[2] != m[1] {
		t.Errorf("the run's summary says route a made %s calls and its breaker counted %s faults; every call of a answered 503", m[1], m[2])
	}
	sumRefused, _ := strconv.Atoi(m[3])
	id := jobID(t, r)

	st := w.tenax("status", id, "--json")
	if st.code != 0 {
		t.Fatalf("tenax status --json: exit %d\n%s", st.code, st.stderr)
	}
	var s struct {
		Routes []struct {
			Name            string
			Faults, Refused int
			Succeeded, Left int
		} `json:"routes"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &s); err != nil {
		t.Fatalf("status --json: %v\n%s", err, st.stdout)
	}
	var faults, refused int
	found := false
	for _, rt := range s.Routes {
		switch rt.Name {
		case "a":
			found, faults, refused = true, rt.Faults, rt.Refused
		case "b":
			if rt.Faults != 0 || rt.Refused != 0 {
				t.Errorf("route b: %d faults, %d refused; want none, it answered every call", rt.Faults, rt.Refused)
			}
		}
	}
	if !found || faults != calls || faults < 5 {
		t.Fatalf("status --json route a: %d faults (found %v), want the %d calls the run made on it, at least the threshold's 5\n%s", faults, found, calls, st.stdout)
	}
	if refused != sumRefused {
		t.Errorf("status --json route a: %d refused, the run's summary %d; one run, the same count", refused, sumRefused)
	}

	text := w.tenax("status", id)
	want := fmt.Sprintf("| breaker: %d fault(s), %d refused", faults, refused)
	var aLine string
	for _, line := range strings.Split(text.stdout, "\n") {
		if strings.Contains(line, " a: ") {
			aLine = line
		}
		if strings.Contains(line, " b: ") && strings.Contains(line, "breaker:") {
			t.Errorf("route b's line shows breaker counts it has none of: %q", line)
		}
	}
	if !strings.Contains(aLine, want) {
		t.Errorf("status route a's line is %q, want it to carry %q\n%s", aLine, want, text.stdout)
	}
}
