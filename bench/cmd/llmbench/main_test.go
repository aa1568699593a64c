package main

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenaxhq/tenax/mock"
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
		{cpu{Cache: "both", Peers: "http,sdk"}, "on off peer-http peer-sdk | off peer-http peer-sdk on | peer-http peer-sdk on off"},
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
	for _, bad := range []cpu{{Cache: "maybe"}, {Cache: "pg"}, {Peers: "curl"}, {Peers: "sdk", Provider: "anthropic"}} {
		if _, err := bad.cacheModes(0); err == nil {
			t.Errorf("cache %q (store %q, peers %q, provider %q) was taken", bad.Cache, bad.Store, bad.Peers, bad.Provider)
		}
	}
}

func TestCPURatiosAreTenaxAgainstItsCacheOffAndEachPeer(t *testing.T) {
	cases := []struct {
		modes []string
		want  string
	}{
		{[]string{"on", "off"}, "on/off"},
		{[]string{"off", "peer-sdk", "on"}, "on/off off/peer-sdk on/peer-sdk"},
		{[]string{"on", "peer-http", "peer-sdk"}, "on/peer-http on/peer-sdk"},
		{[]string{"on"}, ""},
	}
	for _, tc := range cases {
		var got []string
		for _, p := range ratioPairs(tc.modes) {
			got = append(got, p[0]+"/"+p[1])
		}
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("ratioPairs(%v) = %q, want %q", tc.modes, s, tc.want)
		}
	}
}

func TestAPeerRunStopsAtItsFirstFailedCall(t *testing.T) {
	var made atomic.Int64
	calls, err := fanOut(context.Background(), 1000, 4, func(_ context.Context, i int) error {
		made.Add(1)
		if i == 10 {
			return errors.New("refused")
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "call 10: refused") {
		t.Fatalf("fanOut = %d, %v; want the error of call 10", calls, err)
	}
	if made.Load() == 1000 {
		t.Errorf("all 1000 calls were made after call 10 failed")
	}
	if calls, err := fanOut(context.Background(), 100, 8, func(context.Context, int) error { return nil }); err != nil || calls != 100 {
		t.Errorf("fanOut of 100 good calls = %d, %v; want 100, nil", calls, err)
	}
}

func TestEachPeerMakesEveryCallOfARunAgainstTheMock(t *testing.T) {
	hs := httptest.NewServer(mock.New(mock.Config{}))
	defer hs.Close()
	for name, peer := range peers {
		calls, err := peer(context.Background(), cpu{Items: 50, Concurrency: 4}, hs.URL+"/v1")
		if err != nil || calls != 50 {
			t.Errorf("peer %s = %d calls, %v; want 50, nil", name, calls, err)
		}
	}
}
