package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultDBOutageLimit is how long a worker waits for a database that went
// away (a connection terminated, PostgreSQL restarting) before it exits.
const DefaultDBOutageLimit = 5 * time.Minute

// Backoff between the tries of a statement that lost its connection: it
// doubles from dbRetryFirst up to dbRetryMax.
const (
	dbRetryFirst = 100 * time.Millisecond
	dbRetryMax   = 5 * time.Second
)

// isConnLoss reports whether err says the database connection was lost or
// could not be made, rather than that the statement itself was refused:
// only those are tried again. A statement refused by a live server (a
// constraint, a syntax error) would be refused again.
func isConnLoss(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08 is "connection exception"; 57P01–57P03 are the
		// server ending the session (pg_terminate_backend, a shutdown)
		// or not yet taking connections (a restart).
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// outage follows the worker's lost database: when it went away, so that
// the worker says so once, says when it is back, and gives up past its
// limit.
type outage struct {
	mu    sync.Mutex
	since time.Time // zero while the database answers
}

// lost notes a lost connection and returns when the outage began.
func (o *outage) lost(log *slog.Logger, limit time.Duration, what string, err error) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.since.IsZero() {
		o.since = time.Now()
		log.Warn("database connection lost: reconnecting with backoff; the worker exits if the database stays away past --db-outage-limit",
			"during", what, "db_outage_limit", limit, "error", err)
	}
	return o.since
}

// back notes that the database answered again.
func (o *outage) back(log *slog.Logger) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.since.IsZero() {
		// At the level of the "lost" line: at tenax's default --log-level
		// (warn) an operator who saw the loss must also see its end.
		log.Warn("database connection back", "down_for", time.Since(o.since).Round(time.Millisecond))
		o.since = time.Time{}
	}
}

// errOutage is the error of a worker whose database stayed away too long.
func errOutage(limit time.Duration, err error) error {
	return fmt.Errorf("worker: the database stayed unreachable for more than %s (--db-outage-limit); check PostgreSQL, then start the worker again: %w", limit, err)
}

// withDB runs fn, and runs it again with backoff while its connection is
// lost, until the database has been away longer than the worker's
// DBOutageLimit or the worker is stopped now. fn must be safe to run again:
// a transaction that failed was rolled back, or (its commit's answer
// lost) committed, which fn must find and not redo.
func (w *Worker) withDB(ctx context.Context, what string, fn func() error) error {
	delay := dbRetryFirst
	for {
		err := fn()
		if err == nil {
			w.outage.back(w.log)
			return nil
		}
		if !isConnLoss(err) || ctx.Err() != nil || w.hard.Err() != nil {
			return err
		}
		since := w.outage.lost(w.log, w.cfg.DBOutageLimit, what, err)
		if time.Since(since) > w.cfg.DBOutageLimit {
			return errOutage(w.cfg.DBOutageLimit, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		case <-w.hard.Done():
			t.Stop()
			return err
		}
		delay = min(2*delay, dbRetryMax)
	}
}
