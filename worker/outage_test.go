package worker_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// syncBuffer is a log destination written by the worker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAWorkerSurvivesItsConnectionsBeingTerminated: one
// pg_terminate_backend of a worker's connection (or a PostgreSQL
// restart) made the next record's transaction fail, which stopped the
// job's engine as a storage failure: the worker exited 4. Its connections,
// found by their application_name, are ended three times while it works:
// it says so, reconnects, stays up, and the job ends with every item
// recorded exactly once.
func TestAWorkerSurvivesItsConnectionsBeingTerminated(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 300
	e := enqueue(t, c, writeJob(t, n, "mock:\n  latency: 5ms\n"))
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	// The worker has a client of its own: the test's reads must not be
	// the connections it ends.
	w, err := open(t, dsn).NewWorker(worker.Config{Jobs: []string{e.JobID}, Concurrency: 4, Options: job.Options{Home: t.TempDir(), Logger: log}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	admin, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	name := "tenax worker " + w.ID()
	terminated, cuts := 0, 0
	// Cut every 10 records until a record's statement met a cut (the
	// worker said so), at least three times: a cut that only ends idle
	// connections tests River's reconnects, not tenax's.
	for at := 10; cuts < 3 || !strings.Contains(logs.String(), "database connection lost"); at += 10 {
		if at >= n {
			t.Fatalf("%d cuts (%d connections) and no statement of the worker met one: %s", cuts, terminated, logs.String())
		}
		waitFor(t, "items recorded before a cut", func() (bool, error) {
			select {
			case err := <-done:
				t.Fatalf("the worker exited before the job ended: %v", err)
			default:
			}
			return len(finals(t, dsn, e.JobID)) >= at, nil
		})
		var k int
		if err := admin.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&k); err != nil {
			t.Fatal(err)
		}
		terminated += k
		cuts++
	}
	if terminated == 0 {
		t.Fatalf("no connection has application_name %q: the worker's connections must carry it", name)
	}
	waitFor(t, "the job to end", func() (bool, error) {
		select {
		case err := <-done:
			t.Fatalf("the worker exited before the job ended (%d connections terminated): %v\n%s", terminated, err, logs.String())
		default:
		}
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("worker: %v", err)
	}
	if got := jobState(t, c, e.JobID); got != store.StateCompleted {
		t.Errorf("job %s, want %s", got, store.StateCompleted)
	}
	oneRecordEach(t, dsn, e.JobID, n, "after the worker's connections were terminated")
	if !strings.Contains(logs.String(), "database connection back") {
		t.Errorf("the worker never said its database was back: %s", logs.String())
	}
}

// cutProxy forwards TCP connections to the database, and can cut them:
// while down it ends every connection and refuses new ones, as a
// PostgreSQL restart does, without touching the database other tests use.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.setDown(true) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *cutProxy) serve(c net.Conn) {
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.mu.Unlock()
	d, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, d)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(d, c); d.Close() }()
	_, _ = io.Copy(c, d)
	c.Close()
}

// setDown cuts every connection and refuses new ones, or lets them in
// again.
func (p *cutProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// TestAWorkerRidesOutADatabaseOutage: a PostgreSQL restart made every
// worker exit 4. The worker's database goes away for outage (every
// connection cut, new ones refused) while the job runs; the worker stays
// up, says so, and the job ends with each item recorded once.
func TestAWorkerRidesOutADatabaseOutage(t *testing.T) {
	const outage = 3 * time.Second
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 200
	e := enqueue(t, c, writeJob(t, n, "mock:\n  latency: 5ms\n"))
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := newCutProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	wc, err := worker.Open(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	var logs syncBuffer
	// River's completer may give up on results it could not write
	// during the outage: those River jobs wait for a rescue, after the
	// shortest rescue-after.
	w, err := wc.NewWorker(worker.Config{Jobs: []string{e.JobID}, Concurrency: 4, DBOutageLimit: time.Minute, RescueAfter: 6 * time.Second,
		Options: job.Options{Home: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	alive := func() {
		select {
		case err := <-done:
			t.Fatalf("the worker exited before the job ended: %v\n%s", err, logs.String())
		default:
		}
	}
	waitFor(t, "items recorded before the outage", func() (bool, error) { alive(); return len(finals(t, dsn, e.JobID)) >= 20, nil })
	p.setDown(true)
	// The outage lasts until the worker met it, and at least outage.
	downAt := time.Now()
	waitFor(t, "the worker to meet the outage", func() (bool, error) {
		alive()
		return strings.Contains(logs.String(), "database connection lost") && time.Since(downAt) >= outage, nil
	})
	p.setDown(false)
	down := time.Since(downAt)
	waitFor(t, "the job to end", func() (bool, error) { alive(); return jobState(t, c, e.JobID) != store.StateRunning, nil })
	stop()
	if err := <-done; err != nil {
		t.Fatalf("worker: %v", err)
	}
	if got := jobState(t, c, e.JobID); got != store.StateCompleted {
		t.Errorf("job %s, want %s", got, store.StateCompleted)
	}
	oneRecordEach(t, dsn, e.JobID, n, "after a database outage")
	t.Logf("database away %s; the worker stayed up; %d items, each recorded once", down.Round(100*time.Millisecond), n)
}
