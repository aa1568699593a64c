package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/worker/workertype"
)

// The values a workers' database reports and takes live in workertype,
// so that a console reads them without linking River or pgx; these are
// worker's names for them.
type (
	// Info is one worker process as tenax_workers knows it.
	Info = workertype.Info
	// Progress is where a job run by workers stands.
	Progress = workertype.Progress
	// CheckIns is where a job's check-ins stand while a terminal holds
	// them.
	CheckIns = workertype.CheckIns
	// Spend is a job's shared budget account.
	Spend = workertype.Spend
	// BreakerState is a job's shared circuit breaker as an operator sees
	// it.
	BreakerState = workertype.BreakerState
	// Decision is the operator's answer to a job's open shared breaker.
	Decision = workertype.Decision
	// AnsweredError is returned by Decide when the breaker's trip was
	// answered already: the first answer wins.
	AnsweredError = workertype.AnsweredError
)

// workerAlive is workertype.AliveSQL, the one rule that judges a worker
// of tenax_workers w alive, by the database's clock.
const workerAlive = workertype.AliveSQL

// Workers lists every worker that has run on this database, the latest
// heartbeat first.
func (c *Client) Workers(ctx context.Context) ([]Info, error) {
	rows, err := c.pool.Query(ctx, `SELECT w.id, w.host, w.pid, w.jobs, w.concurrency, w.in_flight, w.finished, w.started, w.heartbeat, w.stopped,
			w.stopped IS NULL AND NOT `+workerAlive+`
		FROM tenax_workers w ORDER BY w.heartbeat DESC, w.id`)
	if err != nil {
		return nil, fmt.Errorf("worker: listing workers: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Info, error) {
		var i Info
		err := row.Scan(&i.ID, &i.Host, &i.PID, &i.Jobs, &i.Concurrency, &i.InFlight, &i.Finished, &i.Started, &i.Heartbeat, &i.Stopped, &i.Lost)
		if i.Lost {
			// Its row holds what its last heartbeat said; none of those
			// items runs on it now.
			i.InFlight = 0
		}
		return i, err
	})
	if err != nil {
		return nil, fmt.Errorf("worker: listing workers: %w", err)
	}
	return list, nil
}

// Progress reads a job's progress.
func (c *Client) Progress(ctx context.Context, jobID string) (Progress, error) {
	var p Progress
	var queue string
	err := c.pool.QueryRow(ctx, `SELECT queue FROM tenax_queues WHERE job_id = $1`, jobID).Scan(&queue)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, fmt.Errorf("worker: job %s: %w", jobID, ErrNotQueued)
	}
	if err != nil {
		return p, fmt.Errorf("worker: job %s: %w", jobID, err)
	}
	// Items, not River jobs: a group's River job counts its items. The
	// groups already tried and not completed ("round:items") may hold
	// items recorded this round: countRecorded moves those to Finished.
	rows, err := c.pool.Query(ctx, `SELECT state, sum(coalesce((args->>'n')::bigint, 1)),
		coalesce(array_agg(coalesce(args->>'round', '0') || ':' || (args->>'items'))
			FILTER (WHERE kind = $2 AND attempt > 0 AND state <> 'completed' AND args ? 'items'), '{}')
		FROM river_job WHERE queue = $1 GROUP BY state`, queue, ItemsKind)
	if err != nil {
		return p, fmt.Errorf("worker: progress of job %s: %w", jobID, err)
	}
	var (
		state string
		n     int
		sets  []string
		tried []triedGroup
	)
	_, err = pgx.ForEachRow(rows, []any{&state, &n, &sets}, func() error {
		*countOf(&p, state) += n
		for _, s := range sets {
			tried = append(tried, triedGroup{state: state, set: s})
		}
		return nil
	})
	if err != nil {
		return p, fmt.Errorf("worker: progress of job %s: %w", jobID, err)
	}
	if err := c.countRecorded(ctx, jobID, tried, &p); err != nil {
		return p, fmt.Errorf("worker: progress of job %s: %w", jobID, err)
	}
	err = c.pool.QueryRow(ctx, `SELECT paused_at IS NOT NULL FROM river_queue WHERE name = $1`, queue).Scan(&p.Paused)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return p, fmt.Errorf("worker: progress of job %s: %w", jobID, err)
	}
	var ci CheckIns
	var attending bool
	err = c.pool.QueryRow(ctx, `SELECT c.every, c.done, c.next, c.due, coalesce(b.attended > now() - $2::interval, false)
		FROM tenax_checkins c LEFT JOIN tenax_breakers b ON b.job_id = c.job_id WHERE c.job_id = $1`, jobID, attended).
		Scan(&ci.Every, &ci.Done, &ci.Next, &ci.Due, &attending)
	switch {
	case err == nil:
		if ci.Every > 0 && attending {
			p.CheckIns = &ci
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return p, fmt.Errorf("worker: progress of job %s: %w", jobID, err)
	}
	b, err := c.breaker(ctx, jobID)
	if err != nil {
		return p, err
	}
	var sp Spend
	var micro int64
	err = c.pool.QueryRow(ctx, `SELECT tokens, cost_micro, held, reached FROM tenax_budgets WHERE job_id = $1`, jobID).Scan(&sp.Tokens, &micro, &sp.Held, &sp.Reached)
	switch {
	case err == nil:
		sp.CostUSD = float64(micro) / 1e6
		p.Budget = &sp
	case !errors.Is(err, pgx.ErrNoRows):
		return p, fmt.Errorf("worker: progress of job %s: %w", jobID, err)
	}
	p.Hold = b.hold()
	p.Breaker = BreakerState{Open: b.State == "open", Action: b.Action, Reason: b.Reason, LastError: b.LastError, Owner: b.Owner, Decision: b.Decision, DecidedBy: b.DecidedBy, Trips: b.Trips,
		Summary: b.Summary, Failures: b.Failures}
	return p, nil
}

// countOf is the field of p that counts the items of River jobs in
// state; a state River adds later counts nowhere.
func countOf(p *Progress, state string) *int {
	switch state {
	case "completed":
		return &p.Finished
	case "available", "scheduled", "pending":
		return &p.Waiting
	case "running":
		return &p.Running
	case "retryable":
		return &p.Retrying
	case "discarded", "cancelled":
		return &p.Discarded
	}
	return new(int)
}

// triedGroup is a River job of a group of items that ran at least once
// and is not completed: its state and "round:items".
type triedGroup struct{ state, set string }

// countRecorded moves to Finished the items that have their final record
// this round though their River job is not completed: a group under way
// completes with its last item, a group whose execution failed or was
// rescued runs again for its items without a record, and a group
// cancelled for a missing input keeps the items that ran. Only River jobs
// already tried (attempt > 0) can hold such items, which keeps the read
// to the groups under way and the few tried again.
func (c *Client) countRecorded(ctx context.Context, jobID string, tried []triedGroup, p *Progress) error {
	type group struct {
		field *int
		round int
		idxs  []int
	}
	var groups []group
	asked := map[int][]int{} // round → the groups' idx
	for _, t := range tried {
		r, set, _ := strings.Cut(t.set, ":")
		round, err := strconv.Atoi(r)
		if err != nil {
			continue
		}
		idxs, err := parseItemSet(set)
		if err != nil {
			continue // counted by its state; the worker that runs it reports the damage
		}
		groups = append(groups, group{countOf(p, t.state), round, idxs})
		asked[round] = append(asked[round], idxs...)
	}
	recorded := map[[2]int]bool{} // (round, idx)
	for round, idxs := range asked {
		rows, err := c.pool.Query(ctx, `SELECT idx FROM tenax_finals WHERE job_id = $1 AND round = $2 AND idx = ANY($3)`, jobID, round, idxs)
		if err != nil {
			return err
		}
		var idx int
		if _, err := pgx.ForEachRow(rows, []any{&idx}, func() error { recorded[[2]int{round, idx}] = true; return nil }); err != nil {
			return err
		}
	}
	for _, g := range groups {
		for _, idx := range g.idxs {
			if recorded[[2]int{g.round, idx}] {
				*g.field--
				p.Finished++
			}
		}
	}
	return nil
}

// Decisions.
const (
	Continue = workertype.Continue
	Abort    = workertype.Abort
)

// ErrBreakerClosed is returned by Decide for a job whose breaker is not
// open.
var ErrBreakerClosed = workertype.ErrBreakerClosed

// ErrTripSettled is returned by DecideTrip when the trip it answers was
// settled (answered, or closed by its probes) and the breaker tripped
// again since: an answer to one question never answers the next.
var ErrTripSettled = workertype.ErrTripSettled

// Decide answers a job's open shared breaker, as by (who answers, as
// others are told: "tenax breaker on host (pid 12)"). Continue lets the
// worker that tripped reset its breaker and reopens the queue; Abort
// stops the job on every worker (its items stay pending; `tenax resume`
// runs them). When the worker that tripped is gone, Decide acts for it.
// The first answer to a trip wins: a later one returns an *AnsweredError
// saying which, and ErrBreakerClosed once the breaker closed again.
func (c *Client) Decide(ctx context.Context, jobID string, d Decision, by string) error {
	return c.DecideTrip(ctx, jobID, 0, d, by)
}

// DecideTrip is Decide for the operator who saw one question: it answers
// trip trip of the job's breaker (BreakerState.Trips, Question.Trip) and
// no later one. Once that trip was settled and the breaker tripped again,
// it returns ErrTripSettled. Trip 0 answers whichever trip is open.
func (c *Client) DecideTrip(ctx context.Context, jobID string, trip int, d Decision, by string) error {
	if d != Continue && d != Abort {
		return fmt.Errorf("worker: decision %q: want continue or abort", d)
	}
	var b breakerRow
	for {
		tag, err := c.pool.Exec(ctx, `UPDATE tenax_breakers SET decision = $2, decided_by = $3, updated = now()
			WHERE job_id = $1 AND state = 'open' AND decision = '' AND ($4::integer = 0 OR trips = $4)`, jobID, string(d), by, trip)
		if err != nil {
			return fmt.Errorf("worker: job %s: %w", jobID, err)
		}
		b, err = c.breaker(ctx, jobID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			break
		}
		if trip != 0 && b.Trips != trip {
			return fmt.Errorf("worker: job %s: trip %d: %w (trip %d now)", jobID, trip, ErrTripSettled, b.Trips)
		}
		if b.State != "open" {
			return fmt.Errorf("worker: job %s: %w", jobID, ErrBreakerClosed)
		}
		if b.Decision != "" {
			return &AnsweredError{JobID: jobID, Decision: Decision(b.Decision), By: b.DecidedBy}
		}
		// The trip opened the row between the two statements: answer
		// it. (Taking that for an answer with no decision made an
		// unattended trip abort its own worker and leave the others
		// holding, the job aborted with no decision in the row.)
	}
	if d == Continue && b.Stopped == "" && (!b.OwnerAlive || b.Action != "prompt") {
		// Nobody is waiting for the answer (the worker that tripped is
		// gone, or it was an abort): reopen the job here.
		var queue string
		if err := c.pool.QueryRow(ctx, `SELECT queue FROM tenax_queues WHERE job_id = $1`, jobID).Scan(&queue); err != nil {
			return fmt.Errorf("worker: job %s: %w", jobID, err)
		}
		return c.resetBreaker(ctx, jobID, queue)
	}
	return nil
}
