package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/report"
	"github.com/tenaxhq/tenax/store"
)

// TestAKilledWorkerIsLost: a worker killed with -9 kept showing its last
// "4 in flight" and a heartbeat that only got older, and no state, in
// tenax status and on the job's page. A worker that did not stop and
// whose heartbeat is older than its own rescue-after is lost (its items
// go back to the queue), with none in flight; by the rule that judges the
// owner of a breaker alive.
func TestAKilledWorkerIsLost(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	cases := []struct {
		id          string
		beatAgo     time.Duration
		rescueAfter time.Duration
		stopped     bool
		wantLost    bool
	}{
		{id: "killed", beatAgo: 2 * time.Minute, rescueAfter: time.Minute, wantLost: true},
		{id: "killed-short-rescue", beatAgo: 10 * time.Second, rescueAfter: 6 * time.Second, wantLost: true},
		{id: "beating", beatAgo: 5 * time.Second, rescueAfter: time.Minute},
		{id: "slow-beats-long-rescue", beatAgo: 2 * time.Minute, rescueAfter: 10 * time.Minute},
		{id: "stopped", beatAgo: time.Hour, rescueAfter: time.Minute, stopped: true},
	}
	for _, tc := range cases {
		var stopped *time.Time
		if tc.stopped {
			at := time.Now().Add(-tc.beatAgo)
			stopped = &at
		}
		if _, err := conn.Exec(t.Context(), `INSERT INTO tenax_workers (id, host, pid, concurrency, in_flight, heartbeat, rescue_after, stopped)
			VALUES ($1, 'a-host', 1, 4, 4, now() - $2::interval, $3, $4)`, tc.id, tc.beatAgo, tc.rescueAfter, stopped); err != nil {
			t.Fatal(err)
		}
	}
	list, err := c.Workers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, i := range list {
		got[i.ID] = true
		for _, tc := range cases {
			if tc.id != i.ID {
				continue
			}
			if i.Lost != tc.wantLost {
				t.Errorf("%s (heartbeat %s ago, rescue-after %s, stopped %v): lost %v, want %v", tc.id, tc.beatAgo, tc.rescueAfter, tc.stopped, i.Lost, tc.wantLost)
			}
			if wantInFlight := 4; tc.wantLost && i.InFlight != 0 || !tc.wantLost && i.InFlight != wantInFlight {
				t.Errorf("%s: %d in flight, want 0 when lost, else the %d its heartbeat wrote", tc.id, i.InFlight, wantInFlight)
			}
		}
	}
	if len(got) != len(cases) {
		t.Errorf("listed %v, want every one of the %d workers", got, len(cases))
	}
}

// TestAJobWhoseLastWorkerWasKilledIsStale: after kill -9 of the last
// worker the job stayed "running" in status, status --json and the page's
// job list until another worker took it up. A job saved as running whose
// workers are all dead or stopped (workerAlive) is now stale, as a killed
// single run is; one that no worker took up yet, or that a live worker
// holds, is running.
func TestAJobWhoseLastWorkerWasKilledIsStale(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	type w struct {
		beatAgo time.Duration
		stopped bool
	}
	cases := []struct {
		name    string
		workers []w
		want    store.State
	}{
		{"no worker took it up yet", nil, store.StateRunning},
		{"its worker beats", []w{{beatAgo: 5 * time.Second}}, store.StateRunning},
		{"one worker killed, another beats", []w{{beatAgo: 2 * time.Minute}, {beatAgo: time.Second}}, store.StateRunning},
		{"its last worker killed with -9", []w{{beatAgo: 2 * time.Minute}}, store.StateStale},
		{"its workers killed or stopped", []w{{beatAgo: 2 * time.Minute}, {beatAgo: time.Hour, stopped: true}}, store.StateStale},
	}
	for n, tc := range cases {
		j, err := c.Store().Create(t.Context(), store.Manifest{Items: 10, State: store.StateRunning})
		if err != nil {
			t.Fatal(err)
		}
		m := j.Manifest()
		j.Close()
		for k, wk := range tc.workers {
			var stopped *time.Time
			if wk.stopped {
				at := time.Now().Add(-wk.beatAgo)
				stopped = &at
			}
			if _, err := conn.Exec(t.Context(), `INSERT INTO tenax_workers (id, host, pid, concurrency, jobs, heartbeat, rescue_after, stopped)
				VALUES ($1, 'a-host', 1, 4, $2, now() - $3::interval, $4, $5)`,
				fmt.Sprintf("w%d-%d", n, k), []string{m.ID}, wk.beatAgo, time.Minute, stopped); err != nil {
				t.Fatal(err)
			}
		}
		got, why := report.CurrentState(t.Context(), c.Store(), m, " --store URL")
		if got != tc.want {
			t.Errorf("%s: state %s (%s), want %s", tc.name, got, why, tc.want)
		}
		if got == store.StateStale && !strings.Contains(why, "tenax worker --job "+m.ID+" --store URL") {
			t.Errorf("%s: stale, saying %q; want the command that continues it", tc.name, why)
		}
	}
}
