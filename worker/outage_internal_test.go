package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestOnlyALostConnectionIsTriedAgain(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"terminated by pg_terminate_backend", &pgconn.PgError{Code: "57P01"}, true},
		{"server crash", &pgconn.PgError{Code: "57P02"}, true},
		{"server starting up", &pgconn.PgError{Code: "57P03"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"unexpected EOF", fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), true},
		{"closed conn", fmt.Errorf("x: %w", pgconn.ErrConnClosed), true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"canceled", context.Canceled, false},
		{"plain error", errors.New("encoding the record"), false},
	}
	for _, tc := range cases {
		if got := isConnLoss(tc.err); got != tc.want {
			t.Errorf("%s: isConnLoss(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestAWorkerGivesUpOnlyPastItsOutageLimit: a statement that lost its
// connection is tried again with backoff, saying so once and saying when
// the database is back; past DBOutageLimit the error says what to do. A
// statement the server refused is not tried again.
func TestAWorkerGivesUpOnlyPastItsOutageLimit(t *testing.T) {
	lost := &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}
	newWorker := func(logs *bytes.Buffer) *Worker {
		// At tenax's default --log-level (warn): what an operator sees.
		w := &Worker{cfg: Config{DBOutageLimit: time.Minute}, log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
		w.hard, w.stopNow = context.WithCancel(context.Background())
		return w
	}
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		w := newWorker(&logs)
		calls := 0
		start := time.Now()
		err := w.withDB(t.Context(), "recording an item", func(context.Context) error {
			calls++
			if time.Since(start) < 30*time.Second {
				return lost
			}
			return nil
		})
		if err != nil {
			t.Fatalf("an outage of 30s under a limit of 1m: %v", err)
		}
		if calls < 3 {
			t.Errorf("%d calls, want tries again with backoff", calls)
		}
		if n := strings.Count(logs.String(), "database connection lost"); n != 1 {
			t.Errorf("said the connection was lost %d times, want once: %s", n, logs.String())
		}
		if !strings.Contains(logs.String(), "database connection back") {
			t.Errorf("never said the database was back (at the default log level, warn): %s", logs.String())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		w := newWorker(new(bytes.Buffer))
		start := time.Now()
		err := w.withDB(t.Context(), "recording an item", func(context.Context) error { return lost })
		if err == nil || !errors.Is(err, lost) || !strings.Contains(err.Error(), "--db-outage-limit") {
			t.Fatalf("error %v, want the lost connection and the limit named", err)
		}
		if d := time.Since(start); d < time.Minute || d > time.Minute+dbRetryMax+time.Second {
			t.Errorf("gave up after %s, want just past the 1m limit", d)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		w := newWorker(new(bytes.Buffer))
		refused := &pgconn.PgError{Code: "23505"}
		calls := 0
		err := w.withDB(t.Context(), "recording an item", func(context.Context) error { calls++; return refused })
		if !errors.Is(err, refused) || calls != 1 {
			t.Errorf("a refused statement: error %v after %d calls, want it returned after 1", err, calls)
		}
	})
}

// TestAWorkerWithA12sOutageLimitExitsAt12sNot29s: a worker given
// --db-outage-limit 12s exited at +29 s of an outage. It counted the
// outage from the first error's return (a heartbeat every 10 s, or a
// statement on a cut connection that fails only much later) and looked
// again only at the next heartbeat. The limit now counts from the
// beginning of the first contact that failed, and no contact outlives it:
// the worker gives up at the limit, late by no more than the time a
// statement takes to return once its context ends (here none).
func TestAWorkerWithA12sOutageLimitExitsAt12sNot29s(t *testing.T) {
	lost := &pgconn.PgError{Code: "08006", Message: "connection refused"}
	cases := []struct {
		name    string
		contact func(ctx context.Context) error
	}{
		{"refused at once", func(context.Context) error { return lost }},
		{"hung on a cut connection until its context ends", func(ctx context.Context) error {
			<-ctx.Done()
			return fmt.Errorf("reading: %w", ctx.Err())
		}},
		{"each try failing after a 10s connect timeout", func(ctx context.Context) error {
			select {
			case <-time.After(10 * time.Second):
				return lost
			case <-ctx.Done():
				return ctx.Err()
			}
		}},
	}
	const limit = 12 * time.Second
	for _, tc := range cases {
		synctest.Test(t, func(t *testing.T) {
			w := &Worker{cfg: Config{DBOutageLimit: limit}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			w.hard, w.stopNow = context.WithCancel(context.Background())
			defer w.stopNow()
			start := time.Now()
			err := w.withDB(t.Context(), "heartbeat", tc.contact)
			took := time.Since(start)
			if !errors.Is(err, errPastOutageLimit) || !strings.Contains(err.Error(), "--db-outage-limit") {
				t.Fatalf("%s: error %v, want the outage limit named", tc.name, err)
			}
			if took < limit || took > limit+dbOutageSlack {
				t.Errorf("%s: gave up %s after the first failed contact began, want %s to %s", tc.name, took, limit, limit+dbOutageSlack)
			}
		})
	}
}
