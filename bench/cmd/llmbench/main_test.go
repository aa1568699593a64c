package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestMedianOfOddAndEvenCounts(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

// TestScenariosRunWholeJobs runs each scenario on a few items, with real
// jobs and a real mock server, and checks that every run reports all its
// items done and that the medians are printed.
func TestScenariosRunWholeJobs(t *testing.T) {
	for _, args := range [][]string{
		{"faults", "-items", "40", "-rounds", "1", "-latency", "1ms", "-base", "1ms"},
		{"goodput", "-items", "40", "-rounds", "1", "-rpm", "1000"},
	} {
		var out bytes.Buffer
		if err := run(t.Context(), args, &out); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, &out)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if n := strings.Count(out.String(), "median"); n < 1 {
			t.Errorf("%v printed no median:\n%s", args, &out)
		}
		for _, l := range lines[2:] {
			if l == "" || strings.HasPrefix(l, "median") {
				continue
			}
			if f := strings.Fields(l); f[3] != "40" {
				t.Errorf("%v: a run did not bring all 40 items to success: %q", args, l)
			}
		}
	}
}

func TestUnknownScenarioIsAnError(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), []string{"nope"}, &out); err == nil || !strings.Contains(err.Error(), "goodput or faults") {
		t.Errorf("run(nope) = %v, want an error naming the scenarios", err)
	}
}

func TestCPURunsEachCacheInTurnRotatingTheOrderEachRound(t *testing.T) {
	cases := []struct {
		c    cpu
		want string
	}{
		{cpu{Cache: "both"}, "on off | off on | on off"},
		{cpu{Cache: "pg,file,off", Store: "postgres://x"}, "pg file off | file off pg | off pg file"},
		{cpu{Cache: ""}, "on | on | on"},
		{cpu{Cache: "off"}, "off | off | off"},
	}
	for _, tc := range cases {
		var rounds []string
		for round := range 3 {
			modes, err := tc.c.cacheModes(round)
			if err != nil {
				t.Fatalf("cache %q: %v", tc.c.Cache, err)
			}
			rounds = append(rounds, strings.Join(modes, " "))
		}
		if got := strings.Join(rounds, " | "); got != tc.want {
			t.Errorf("cache %q: runs %q, want %q", tc.c.Cache, got, tc.want)
		}
	}
	for _, bad := range []cpu{{Cache: "maybe"}, {Cache: "pg"}} {
		if _, err := bad.cacheModes(0); err == nil {
			t.Errorf("cache %q (store %q) was taken", bad.Cache, bad.Store)
		}
	}
}
