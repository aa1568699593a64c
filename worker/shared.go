package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"github.com/tenaxhq/tenax/console"
	"github.com/tenaxhq/tenax/engine"
)

// shared is what the workers of one job share through the database, seen
// from one worker: the breaker, the provider cooldown and the rate
// limits.
type shared struct {
	r      *runner
	action engine.TripAction

	// sharing writes this engine's breaker changes to the job's row in
	// order (breakershare.go).
	sharing breakerSharing

	// The request and token schedules (GCRA): an emission interval per
	// request or token, and how far ahead of the schedule a burst may go.
	reqInterval time.Duration
	reqBurst    time.Duration
	tokInterval time.Duration
	tokBurst    time.Duration

	// peers is how many live workers work the job, this one included
	// (read every peersEvery): each engine learns 1/peers of the quota
	// that the provider's headers describe to all of them.
	peers     atomic.Int64
	peersRead time.Time // when peers was last read; poll's alone

	mu         sync.Mutex
	gateClosed bool          // another worker's breaker is open: hold calls
	changed    chan struct{} // closed and replaced when gateClosed changes
	cooldown   time.Time     // the latest shared cooldown applied here
	closed     chan struct{}
	closeOnce  sync.Once

	// idle is set when the runner's last execution ended: the job may be
	// drained, so poll's next tick looks at once rather than at its
	// finalizeEvery, and a job's end is recorded a tick after its last
	// record instead of up to two seconds later.
	idle atomic.Bool

	// failures keeps this engine's recent failures for the question of
	// a prompt trip, as the single-process prompt keeps them.
	failures *console.FailureLog

	// budget is the job's shared budget, nil when the spec sets none.
	budget *budget

	// checkins is set while a terminal holds the job's check-ins: each
	// item recorded here counts toward the next (countCheckin).
	checkins atomic.Bool

	// routes is the state each route of a routed job shares, by name
	// (routes.go); empty without routes.
	routes map[string]*sharedRoute

	// kick makes poll look at once at the parts in pending: they
	// changed (a notification, notify.go).
	kick    chan struct{}
	pending atomic.Uint32

	// breakerRead is announced at each of poll's reads of the job's
	// breaker row (a notification of it, the safety net's look): what
	// Trip waits on for the operator's answer.
	breakerRead *news
}

// wake makes poll read part p at once, or right after the look under
// way.
func (s *shared) wake(p part) {
	s.pending.Or(uint32(p))
	select {
	case s.kick <- struct{}{}:
	default: // a look is due already
	}
}

// ledger is the engine's ledger of the job's shared budget, nil when the
// spec sets no budget.
func (s *shared) ledger() engine.Ledger {
	if s.budget == nil {
		return nil
	}
	return s.budget
}

// breakerRow is a job's shared breaker.
type breakerRow struct {
	State, Action, Reason, LastError, Owner, Decision string
	Trips                                             int
	OwnerAlive                                        bool
	// Summary and Failures are the question of a prompt trip, as the
	// worker that tripped rendered it (console.NewTripQuestion).
	Summary  string
	Failures []string
	// DecidedBy says who answered the latest trip; Decision keeps the
	// answer after the breaker closes, until the next trip.
	DecidedBy string
	// Stopped says why an operator stopped the job outside its breaker
	// (Client.Stop: an abort at a check-in), until a resume.
	Stopped string
	// PausedBy names the operator whose pause holds the job (Client.Pause),
	// "" when none; ContinuedBy who lifted the last one.
	PausedBy, ContinuedBy string
	PausedAt              *time.Time
}

// aborted reports whether the job was stopped by its breaker or by an
// operator.
func (b breakerRow) aborted() bool {
	return b.Stopped != "" || b.State == "open" && (b.Action == engine.TripAbort.String() || b.Decision == "abort")
}

// breaker reads a job's shared breaker; a job without a row has a closed
// one.
func (c *Client) breaker(ctx context.Context, jobID string) (breakerRow, error) {
	var b breakerRow
	err := c.pool.QueryRow(ctx, `SELECT b.state, b.action, b.reason, b.last_error, b.owner, b.decision, b.trips,
			COALESCE(`+workerAlive+`, false), b.summary, b.failures, b.decided_by, b.stopped,
			b.paused_by, b.continued_by, b.paused_at
		FROM tenax_breakers b LEFT JOIN tenax_workers w ON w.id = b.owner WHERE b.job_id = $1`, jobID).
		Scan(&b.State, &b.Action, &b.Reason, &b.LastError, &b.Owner, &b.Decision, &b.Trips, &b.OwnerAlive, &b.Summary, &b.Failures, &b.DecidedBy, &b.Stopped,
			&b.PausedBy, &b.ContinuedBy, &b.PausedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return breakerRow{State: "closed"}, nil
	}
	if err != nil {
		return b, fmt.Errorf("worker: reading the breaker of job %s: %w", jobID, err)
	}
	return b, nil
}

func newShared(ctx context.Context, r *runner, cfg engine.Config) (*shared, error) {
	s := &shared{r: r, action: cfg.OnTrip, changed: make(chan struct{}), closed: make(chan struct{}),
		failures: console.NewFailureLog(console.DefaultFailureLogSize), kick: make(chan struct{}, 1),
		breakerRead: newNews()}
	// Joining the job now, not at the next heartbeat, lets the others
	// count this worker in their share of the quota at once.
	if _, err := r.w.c.pool.Exec(ctx, `UPDATE tenax_workers SET jobs = array_append(jobs, $2) WHERE id = $1 AND NOT ($2 = ANY(jobs))`, r.w.id, r.jobID); err != nil {
		return nil, fmt.Errorf("worker: job %s: %w", r.jobID, err)
	}
	s.peers.Store(1)
	s.readPeers(ctx)
	// Counted from this worker's first item, not from its first poll.
	s.followCheckins(ctx)
	pool := r.w.c.pool
	if _, err := pool.Exec(ctx, `INSERT INTO tenax_breakers (job_id) VALUES ($1) ON CONFLICT DO NOTHING`, r.jobID); err != nil {
		return nil, fmt.Errorf("worker: job %s: %w", r.jobID, err)
	}
	for _, name := range []string{"requests", "tokens", "cooldown"} {
		if _, err := pool.Exec(ctx, `INSERT INTO tenax_limits (job_id, name, tat) VALUES ($1, $2, now()) ON CONFLICT DO NOTHING`, r.jobID, name); err != nil {
			return nil, fmt.Errorf("worker: job %s: %w", r.jobID, err)
		}
	}
	if err := s.newRoutes(ctx, cfg); err != nil {
		return nil, err
	}
	if cfg.Budget.MaxTokens > 0 || cfg.Budget.MaxCostUSD > 0 {
		b, err := newBudget(ctx, r)
		if err != nil {
			return nil, err
		}
		s.budget = b
	}
	if rpm := cfg.RequestsPerMinute; rpm > 0 {
		s.reqInterval = time.Minute / time.Duration(rpm)
		// A second's worth of requests may go at once, as the engine's
		// own limiter allows.
		s.reqBurst = max(time.Second-s.reqInterval, 0)
	}
	if tpm := cfg.TokensPerMinute; tpm > 0 {
		s.tokInterval = time.Minute / time.Duration(tpm)
		s.tokBurst = 10 * time.Second
	}
	return s, nil
}

// close ends the poller and writes what the engine's last calls spent.
func (s *shared) close() {
	s.closeOnce.Do(func() { close(s.closed) })
	if s.budget != nil {
		s.budget.close()
	}
}

// poll follows the shared state until the runner ends: another worker's
// trip holds or stops this one, a cooldown set anywhere pauses this
// engine too, and a drained job gets its final state. It reads what a
// notification names as soon as it is woken (wake), and everything at
// every tick while the worker is not listening, else every
// sharedSafetyInterval.
func (s *shared) poll() {
	r := s.r
	tick := cmp.Or(r.w.cfg.sharedPoll, sharedPollInterval)
	safety := max(tick, sharedSafetyInterval)
	t := time.NewTicker(tick)
	defer t.Stop()
	// A worker that joins a job gives back a dead one's holds at once.
	lastFinalize, lastReap, lastLook := time.Now(), time.Time{}, time.Now()
	ctx := r.w.hard
	for {
		select {
		case <-s.closed:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
		parts := part(s.pending.Swap(0))
		if !r.w.listening.Load() || time.Since(lastLook) >= safety {
			parts = partAll
		}
		if parts == partAll {
			lastLook = time.Now()
		}
		s.look(ctx, parts)
		s.readPeers(ctx)
		if s.budget != nil {
			s.budget.retry()
			if time.Since(lastReap) > reapEvery {
				lastReap = time.Now()
				s.budget.reap(ctx)
			}
		}
		if s.idle.Swap(false) && !r.w.cfg.noIdleLook || time.Since(lastFinalize) > cmp.Or(r.w.cfg.finalizeEvery, finalizeEvery) {
			lastFinalize = time.Now()
			if drained, err := r.w.c.drained(ctx, r.queue); err == nil && drained && r.inFlight() == 0 {
				// The job's routes' breaker counts go in before its end:
				// this worker may run on for days after it, and status
				// of the finished job reads them from the manifest.
				if err := r.keepRouteBreakers(ctx, r.eng.Stats().Routes); err != nil {
					r.w.log.Warn("keeping the routes' breaker counts failed", "job", r.jobID, "error", err)
				}
				if err := r.w.c.finalize(ctx, r.jobID); err != nil {
					r.w.log.Warn("recording the job's end failed", "job", r.jobID, "error", err)
				}
			}
		}
	}
}

// look reads parts of the job's shared state and applies them to this
// worker's engine. A read that fails is read again at the next full look.
func (s *shared) look(ctx context.Context, parts part) {
	r := s.r
	// A run idle since a resume stops here; one that is fed learns of
	// it as its items' inputs are read.
	if parts&partResume != 0 {
		if resumed, err := r.resumed(ctx); err == nil && resumed {
			r.stop(stopResumed)
		}
	}
	if parts&partBreaker != 0 {
		if b, err := r.w.c.breaker(ctx, r.jobID); err == nil {
			s.follow(b)
		}
		s.breakerRead.announce()
	}
	if parts&partRoutes != 0 {
		_ = s.followRoutes(ctx)
	}
	if parts&partCheckins != 0 {
		s.followCheckins(ctx)
	}
	if parts&partBudget != 0 && s.budget != nil {
		s.budget.follow(ctx)
	}
	if parts&partCooldown != 0 {
		s.followCooldown(ctx)
	}
}

// followCooldown pauses this worker's engine until the job's shared
// cooldown ends, when another worker extended it.
func (s *shared) followCooldown(ctx context.Context) {
	r := s.r
	var until time.Time
	if err := r.w.c.pool.QueryRow(ctx, `SELECT tat FROM tenax_limits WHERE job_id = $1 AND name = 'cooldown'`, r.jobID).Scan(&until); err != nil {
		return
	}
	s.mu.Lock()
	fresh := until.After(s.cooldown) && time.Until(until) > 0
	if fresh {
		s.cooldown = until
	}
	s.mu.Unlock()
	if fresh {
		r.eng.Cooldown(until, "rate limited: a 429 met by a worker of this job")
	}
}

// peersEvery is how often a worker counts the job's live workers.
const peersEvery = time.Second

// readPeers counts the live workers of the job (workerAlive: not
// stopped, and a heartbeat younger than their rescue delay, after which
// River takes their items too). A failed read keeps the last count.
func (s *shared) readPeers(ctx context.Context) {
	if time.Since(s.peersRead) < peersEvery {
		return
	}
	s.peersRead = time.Now()
	var n int64
	err := s.r.w.c.pool.QueryRow(ctx, `SELECT count(*) FROM tenax_workers w
		WHERE $1 = ANY(w.jobs) AND `+workerAlive, s.r.jobID).Scan(&n)
	if err == nil {
		s.peers.Store(max(n, 1))
	}
}

// quotaShare is the engine's QuotaShare: 1/peers.
func (s *shared) quotaShare() float64 {
	return 1 / float64(max(s.peers.Load(), 1))
}

// follow applies the shared breaker to this worker.
func (s *shared) follow(b breakerRow) {
	r := s.r
	mine := b.Owner == r.w.id
	if b.Stopped == "" {
		s.followPause(b)
	}
	switch {
	case b.Stopped != "":
		r.eng.Stop(engine.StopOperator, b.Stopped)
		s.setGate(true)
	case b.State != "open":
		s.setGate(false)
	case b.aborted():
		detail := "circuit breaker open on worker " + b.Owner + ": " + b.Reason
		reason := engine.StopBreaker
		if b.Decision == "abort" {
			reason, detail = engine.StopOperator, "aborted by the operator after the circuit breaker opened: "+b.Reason
		}
		r.eng.Stop(reason, detail)
		s.setGate(true)
	case mine:
		// This engine's own breaker holds it (wait, prompt).
	case !b.OwnerAlive:
		// The worker that tripped died before deciding: close the
		// breaker; the next failures will trip it again somewhere.
		_, _ = r.w.c.pool.Exec(r.w.hard, `UPDATE tenax_breakers SET state = 'closed', updated = now() WHERE job_id = $1 AND owner = $2 AND state = 'open'`, r.jobID, b.Owner)
		_ = r.w.c.resumeQueue(r.w.hard, r.queue)
	default:
		s.setGate(true)
	}
}

func (s *shared) setGate(closed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gateClosed == closed {
		return
	}
	s.gateClosed = closed
	close(s.changed)
	s.changed = make(chan struct{})
}

// resumeQueue resumes a paused queue; a queue no worker has worked yet
// is not an error. It goes through River, which tells the queue's
// producers at once (NOTIFY): a bare UPDATE of river_queue is only seen
// at their next poll for queue settings, a minute later.
//
// While an operator's pause holds the job, the queue stays paused: only
// Continue lifts it (a breaker closing or a check-in answered meanwhile
// leaves the pause to its operator).
func (c *Client) resumeQueue(ctx context.Context, queue string) error {
	if paused, err := c.pausedQueue(ctx, queue); err != nil || paused {
		return err
	}
	err := c.river.QueueResume(ctx, queue, nil)
	if errors.Is(err, rivertype.ErrNotFound) {
		return nil
	}
	return err
}

// resetBreaker closes a job's shared breaker and resumes its queue.
func (c *Client) resetBreaker(ctx context.Context, jobID, queue string) error {
	if _, err := c.pool.Exec(ctx, `UPDATE tenax_breakers SET state = 'closed', owner = '', updated = now() WHERE job_id = $1`, jobID); err != nil {
		return fmt.Errorf("worker: closing the breaker of job %s: %w", jobID, err)
	}
	if err := c.resumeQueue(ctx, queue); err != nil {
		return fmt.Errorf("worker: resuming the queue of job %s: %w", jobID, err)
	}
	return nil
}

// jobCounts puts the job's counts in place of this worker's in st, for
// the question of a trip: it speaks for every worker of the job, and a
// worker's engine knows neither the job's items nor what the other
// workers finished (its question said "Processed: 8/0" of a job of 200
// items). When the records cannot be read, the worker's own counts stay,
// out of the job's items.
func (s *shared) jobCounts(ctx context.Context, st engine.Stats) engine.Stats {
	st.Total = s.r.sj.Manifest().Items
	var done, failed int
	err := s.r.w.c.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE failed)
		FROM (SELECT DISTINCT ON (idx) failed FROM tenax_records WHERE job_id = $1 ORDER BY idx, seq DESC) latest`, s.r.jobID).Scan(&done, &failed)
	if err == nil {
		st.Succeeded, st.Failed = done-failed, failed
	}
	return st
}

// Trip is the Operator of a job whose on_trip is prompt: no worker has a
// terminal, so the trip waits for the operator's decision in the database
// (`tenax breaker continue|abort JOB`, or the terminal of an attached
// `tenax run`, which asks the question written here).
func (s *shared) Trip(ctx context.Context, rep engine.TripReport) engine.TripDecision {
	r := s.r
	last := ""
	if rep.Last != nil && rep.Last.Err != nil {
		last = fmt.Sprintf("%s: item #%d: %s", rep.Last.Decision.Class, rep.Last.Item.Idx, r.plan.Spec.Redact(rep.Last.Err.Error()))
	}
	if r.plan.Spec.Breaker.OnTrip == "" && !r.w.c.isAttended(ctx, r.jobID) {
		// on_trip unset and no terminal attends the job: abort, as one
		// process without a terminal does, for every worker.
		r.w.log.Warn("circuit breaker open: no terminal attends the job (on_trip unset): aborting", "job", r.jobID, "reason", rep.Reason, "last_error", last)
		return s.abortUnattended(ctx)
	}
	rep.Stats = s.jobCounts(ctx, rep.Stats)
	q := console.NewTripQuestion(rep, s.failures)
	q.Summary = r.plan.Spec.Redact(q.Summary)
	for i, f := range q.Failures {
		q.Failures[i] = r.plan.Spec.Redact(f)
	}
	// The trip's row is opened by breakerChanged, on a goroutine of its
	// own: until it is, the question has no row to go to, and the row's
	// state and decision are the last trip's.
	for {
		done, wake := s.sharing.openWritten()
		if done {
			break
		}
		select {
		case <-ctx.Done():
			return engine.TripAbortRun
		case <-wake:
		}
	}
	asked := false
	// The question is announced as the trip was (the row's trigger
	// names only what workers act on, not the question): an attending
	// terminal asks it at once.
	ask := func() {
		err := pgx.BeginFunc(ctx, r.w.c.pool, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `UPDATE tenax_breakers SET reason = $2, last_error = $3, summary = $5, failures = $6, updated = now()
				WHERE job_id = $1 AND owner = $4 AND state = 'open' AND decision = ''`,
				r.jobID, rep.Reason, last, r.w.id, q.Summary, q.Failures)
			if err != nil {
				return err
			}
			if asked = tag.RowsAffected() == 1; asked {
				_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, breakerChannel, r.w.c.schema+" "+r.jobID)
			}
			return err
		})
		asked = asked && err == nil
	}
	// The answer is waited for as poll reads the row: at once on its
	// notification, else at poll's safety net (every sharedPollInterval
	// while this worker does not listen, every sharedSafetyInterval while
	// it does).
	ask()
	r.w.log.Warn("circuit breaker open: waiting for `tenax breaker continue|abort "+r.jobID+"`", "job", r.jobID, "reason", rep.Reason, "last_error", last)
	for {
		read := s.breakerRead.next()
		if b, err := r.w.c.breaker(ctx, r.jobID); err == nil {
			switch {
			case b.Decision == "continue" || b.State == "closed":
				return engine.TripContinue
			case b.Decision == "abort":
				return engine.TripAbortRun
			case !asked:
				ask()
			}
		}
		select {
		case <-ctx.Done():
			return engine.TripAbortRun
		case <-read:
		}
	}
}

// abortUnattended decides abort on the job's shared breaker, so that
// every worker stops. The breaker's row is opened by breakerChanged on a
// goroutine of its own: until it is, there is nothing to decide on; try
// again at each tick, for a few seconds.
func (s *shared) abortUnattended(ctx context.Context) engine.TripDecision {
	t := time.NewTicker(sharedPollInterval)
	defer t.Stop()
	for range 20 {
		err := s.r.w.c.Decide(ctx, s.r.jobID, Abort, "on_trip (unset): no terminal attends the job")
		var ae *AnsweredError
		switch {
		case err == nil:
			return engine.TripAbortRun
		case errors.As(err, &ae):
			if ae.Decision == Continue {
				return engine.TripContinue
			}
			return engine.TripAbortRun
		}
		select {
		case <-ctx.Done():
			return engine.TripAbortRun
		case <-t.C:
		}
	}
	return engine.TripAbortRun
}

// CheckIn is never asked: a worker's engine has no check-ins (an
// attending terminal holds the job's, through Attend).
func (s *shared) CheckIn(context.Context, engine.CheckIn) bool { return true }

// Hold is the engine's SharedBreaker: calls wait while another worker's
// breaker holds the job.
func (s *shared) Hold() (bool, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gateClosed, s.changed
}

// Cooldown shares a cooldown this worker's engine began on a 429: it
// pauses every worker of the job (the row's trigger announces it, and
// each worker's poll applies it: followCooldown).
func (s *shared) Cooldown(until time.Time) {
	_, _ = s.r.w.c.pool.Exec(s.r.w.hard, `UPDATE tenax_limits SET tat = GREATEST(tat, $2) WHERE job_id = $1 AND name = 'cooldown'`, s.r.jobID, until)
}

// Wait is the engine's SharedLimiter: the call takes its turn in the
// job's request schedule and, with an estimate, its token schedule.
func (s *shared) Wait(ctx context.Context, tokens int) error {
	if s.reqInterval > 0 {
		if err := s.take(ctx, "requests", s.reqInterval, s.reqBurst, 1); err != nil {
			return err
		}
	}
	if s.tokInterval > 0 && tokens > 0 {
		if err := s.take(ctx, "tokens", s.tokInterval, s.tokBurst, tokens); err != nil {
			return err
		}
	}
	return nil
}

// take reserves n units of a shared schedule (GCRA, as a virtual
// schedule): the call's slot is the schedule's theoretical arrival time,
// or now less the burst tolerance when the schedule is behind, and the
// schedule moves n intervals past it, in one UPDATE … RETURNING, so any
// number of workers share one rate. The call then waits for its slot.
//
// Its commit does not wait for the WAL to reach the disk (synchronous_commit
// off for this statement's transaction, as the shared budget's): every call
// of every worker updates the schedule's one row, and a commit that waits
// for the disk holds the row's lock that long, which capped a schedule at
// 340–520 calls a second on the benchmark machine (8 clients, pgbench),
// against 3,900 without the wait: below a 60,000 rpm limit. A PostgreSQL
// crash can lose the last ~0.6 s of the schedule, which then lets that
// much through again: the limit is the provider's, and a 429 still paces.
func (s *shared) take(ctx context.Context, name string, interval, burst time.Duration, n int) error {
	var (
		wait    time.Duration
		setting string
	)
	// A lost connection is tried again (a slot taken by a lost commit is
	// only a slot skipped, as after a crash).
	err := s.r.w.withDB(ctx, "taking a turn in the shared rate limit", func(ctx context.Context) error {
		return s.r.w.c.pool.QueryRow(ctx, `
		WITH u AS (
			UPDATE tenax_limits SET tat = GREATEST(tat, clock_timestamp() - $3::interval) + $4::interval
			WHERE job_id = $1 AND name = $2
			RETURNING GREATEST(tat - $4::interval - clock_timestamp(), interval '0') AS wait
		)
		SELECT wait, set_config('synchronous_commit', 'off', true) FROM u`,
			s.r.jobID, name, burst, interval*time.Duration(n)).Scan(&wait, &setting)
	})
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("worker: the shared %s limit: %w", name, err)
	}
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
