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

// dbOutageSlack bounds how late past --db-outage-limit, counted from the
// beginning of the first failed contact, a worker gives up: every try ends
// at the limit, so only the time a statement takes to return once its
// context ends is left, and pgx returns at once.
const dbOutageSlack = time.Second

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

// lost notes a lost connection found by a contact that began at begun and
// returns when the outage began: at the beginning of its first failed
// contact, not when that contact's error came back (a statement on a
// connection cut without a reset fails only at its deadline).
func (o *outage) lost(log *slog.Logger, limit time.Duration, what string, begun time.Time, err error) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.since.IsZero() {
		o.since = begun
		log.Warn("database connection lost: reconnecting with backoff; the worker exits if the database stays away past --db-outage-limit",
			"during", what, "db_outage_limit", limit, "error", err)
	}
	return o.since
}

// deadline is when a contact that begins at begun must have answered: the
// end of the outage limit counted from the outage's beginning, or from
// begun while the database answers. No contact outlives the limit, so a
// statement hung on a cut connection cannot hold the worker past it.
func (o *outage) deadline(limit time.Duration, begun time.Time) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.since.IsZero() {
		return o.since.Add(limit)
	}
	return begun.Add(limit)
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

// errPastOutageLimit is wrapped by the error of a worker whose database
// stayed away past its DBOutageLimit.
var errPastOutageLimit = errors.New("the database stayed unreachable past the outage limit")

// errOutage is the error of a worker whose database stayed away too long.
func errOutage(limit time.Duration, err error) error {
	return fmt.Errorf("worker: the database stayed unreachable for more than %s (--db-outage-limit); check PostgreSQL, then start the worker again: %w%w", limit, err, noText{errPastOutageLimit})
}

// noText wraps an error for errors.Is without adding to the message.
type noText struct{ err error }

func (noText) Error() string   { return "" }
func (n noText) Unwrap() error { return n.err }

// withDB runs fn, and runs it again with backoff while its connection is
// lost, until the database has been away for DBOutageLimit counted from
// the beginning of the first contact that failed, or the worker is
// stopped now. Each try runs under a context that ends at that limit, so
// the worker gives up at the limit, late only by the time a statement
// takes to return once its context ends. A try that met that end is a
// failed contact. fn must be safe to run again: a transaction that failed
// was rolled back, or (its commit's answer lost) committed, which fn must
// find and not redo.
func (w *Worker) withDB(ctx context.Context, what string, fn func(context.Context) error) error {
	delay := dbRetryFirst
	limit := w.cfg.DBOutageLimit
	for {
		begun := time.Now()
		tctx, cancel := context.WithDeadline(ctx, w.outage.deadline(limit, begun))
		err := fn(tctx)
		timedOut := err != nil && tctx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			w.outage.back(w.log)
			return nil
		}
		if !(timedOut || isConnLoss(err)) || ctx.Err() != nil || w.hard.Err() != nil {
			return err
		}
		since := w.outage.lost(w.log, limit, what, begun, err)
		left := limit - time.Since(since)
		if left <= 0 {
			return errOutage(limit, err)
		}
		// The last wait ends at the limit: the try after it is the
		// worker's last, bounded by the same end.
		t := time.NewTimer(min(delay, left))
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
