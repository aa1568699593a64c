package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tenaxhq/tenax/engine"
)

// tenax_routes keeps the state each route of a routed job shares among
// the job's workers (engine.SharedRoute), one row per (job, route): its
// breaker, open or closed, until when it is open and how many times it
// opened from closed (trips), and its latest cooldown. A route's told
// rate limits are schedules of tenax_limits, named routeLimit.
//
// A worker whose breaker of a route opens writes it here; every worker
// reads the rows at each poll and opens its own breaker of the route
// until the same instant, when each lets its probes through. So a route's
// outage opens its breaker once for the job: the others send it no call
// until then, where each used to find the outage again by itself. There
// is no owner to outlive: a worker that dies leaves only a time. The
// table is made by worker/migration.

// routeLimit is the name, in tenax_limits, of a route's shared schedule
// of kind ("requests", "tokens"). The run's own schedules have bare
// names; a slash cannot start a route's name in a spec, nor be confused
// with them.
func routeLimit(route, kind string) string { return "route/" + route + "/" + kind }

// sharedRoute is one route's state shared by the workers of a job, seen
// from one worker: the engine's SharedRoute for that route.
type sharedRoute struct {
	s    *shared
	name string

	// The route's told limits as GCRA schedules, as shared's are the
	// run's; 0 when the spec tells none.
	reqInterval, reqBurst time.Duration
	tokInterval, tokBurst time.Duration

	mu      sync.Mutex
	state   engine.RouteState // as last read, or as this worker wrote it
	changed chan struct{}     // closed and replaced when state changes
	// want is the breaker this worker's engine last reported, wantSeq
	// its number, writtenSeq the number last written: writes run on
	// goroutines of their own, and the latest report is written last
	// whatever order they run in.
	want                engine.RouteState
	wantSeq, writtenSeq uint64
	writeMu             sync.Mutex
}

// newRoutes makes the job's route rows and schedules, and reads the
// routes' state, so that the engine starts from what the other workers
// found.
func (s *shared) newRoutes(ctx context.Context, cfg engine.Config) error {
	s.routes = map[string]*sharedRoute{}
	pool := s.r.w.c.pool
	for _, rc := range cfg.Routes {
		sr := &sharedRoute{s: s, name: rc.Name, changed: make(chan struct{})}
		if _, err := pool.Exec(ctx, `INSERT INTO tenax_routes (job_id, route) VALUES ($1, $2) ON CONFLICT DO NOTHING`, s.r.jobID, rc.Name); err != nil {
			return fmt.Errorf("worker: job %s, route %s: %w", s.r.jobID, rc.Name, err)
		}
		if rpm := rc.RequestsPerMinute; rpm > 0 {
			sr.reqInterval = time.Minute / time.Duration(rpm)
			sr.reqBurst = max(time.Second-sr.reqInterval, 0)
		}
		if tpm := rc.TokensPerMinute; tpm > 0 {
			sr.tokInterval = time.Minute / time.Duration(tpm)
			sr.tokBurst = 10 * time.Second
		}
		for _, kind := range []string{"requests", "tokens"} {
			if _, err := pool.Exec(ctx, `INSERT INTO tenax_limits (job_id, name, tat) VALUES ($1, $2, now()) ON CONFLICT DO NOTHING`, s.r.jobID, routeLimit(rc.Name, kind)); err != nil {
				return fmt.Errorf("worker: job %s, route %s: %w", s.r.jobID, rc.Name, err)
			}
		}
		s.routes[rc.Name] = sr
	}
	return s.followRoutes(ctx)
}

// sharedRoute is the engine's Config.SharedRoute.
func (s *shared) sharedRoute(name string) engine.SharedRoute {
	if sr := s.routes[name]; sr != nil {
		return sr
	}
	// Not in the spec's routes: nothing to share it with.
	sr := &sharedRoute{s: s, name: name, changed: make(chan struct{})}
	s.routes[name] = sr
	return sr
}

// followRoutes reads the job's route rows: a change another worker made
// reaches this worker's engine (engine.SharedRoute's Follow).
func (s *shared) followRoutes(ctx context.Context) error {
	if len(s.routes) == 0 {
		return nil
	}
	rows, err := s.r.w.c.pool.Query(ctx, `SELECT route, state = 'open', open_until, cooldown FROM tenax_routes WHERE job_id = $1`, s.r.jobID)
	if err != nil {
		return fmt.Errorf("worker: reading the routes of job %s: %w", s.r.jobID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var st engine.RouteState
		var until, cooldown *time.Time
		if err := rows.Scan(&name, &st.Open, &until, &cooldown); err != nil {
			return fmt.Errorf("worker: reading the routes of job %s: %w", s.r.jobID, err)
		}
		st.OpenUntil, st.Cooldown = deref(until), deref(cooldown)
		if !st.Open {
			st.OpenUntil = time.Time{}
		}
		if sr := s.routes[name]; sr != nil {
			sr.set(st)
		}
	}
	return rows.Err()
}

// set makes st the route's state, waking its followers if it changed.
func (sr *sharedRoute) set(st engine.RouteState) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if sr.state.Open == st.Open && sr.state.OpenUntil.Equal(st.OpenUntil) && sr.state.Cooldown.Equal(st.Cooldown) {
		return
	}
	sr.state = st
	close(sr.changed)
	sr.changed = make(chan struct{})
}

// Follow returns the route's shared state and a channel closed when it
// changes.
func (sr *sharedRoute) Follow() (engine.RouteState, <-chan struct{}) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return sr.state, sr.changed
}

// Opened shares this engine's breaker of the route opening until until.
// A breaker the job already has open as long (this engine followed the
// job's) writes nothing.
func (sr *sharedRoute) Opened(until time.Time) {
	sr.mu.Lock()
	if sr.state.Open && !until.After(sr.state.OpenUntil) {
		sr.mu.Unlock()
		return
	}
	// Seen as written: the echo of this write at the next poll is no
	// change to follow.
	sr.state.Open, sr.state.OpenUntil = true, until
	sr.want = engine.RouteState{Open: true, OpenUntil: until}
	sr.wantSeq++
	sr.mu.Unlock()
	go sr.writeBreaker()
}

// Closed shares this engine's breaker of the route closing.
func (sr *sharedRoute) Closed() {
	sr.mu.Lock()
	if !sr.state.Open {
		sr.mu.Unlock()
		return
	}
	sr.state.Open, sr.state.OpenUntil = false, time.Time{}
	sr.want = engine.RouteState{}
	sr.wantSeq++
	sr.mu.Unlock()
	go sr.writeBreaker()
}

// writeBreaker writes the breaker this engine last reported, unless a
// later write already did. An opening counts as a trip of the job's
// route only from closed: the other workers opening theirs after it, or
// a failed probe, do not.
func (sr *sharedRoute) writeBreaker() {
	sr.writeMu.Lock()
	defer sr.writeMu.Unlock()
	sr.mu.Lock()
	want, seq := sr.want, sr.wantSeq
	sr.mu.Unlock()
	if seq <= sr.writtenSeq {
		return
	}
	r := sr.s.r
	ctx := context.WithoutCancel(r.w.hard)
	var err error
	if want.Open {
		_, err = r.w.c.pool.Exec(ctx, `UPDATE tenax_routes SET trips = trips + CASE WHEN state = 'closed' THEN 1 ELSE 0 END,
			state = 'open', open_until = CASE WHEN state = 'open' THEN GREATEST(open_until, $3) ELSE $3 END, updated = now()
			WHERE job_id = $1 AND route = $2`, r.jobID, sr.name, want.OpenUntil)
	} else {
		_, err = r.w.c.pool.Exec(ctx, `UPDATE tenax_routes SET state = 'closed', open_until = NULL, updated = now()
			WHERE job_id = $1 AND route = $2`, r.jobID, sr.name)
	}
	if err != nil {
		r.w.log.Warn("sharing a route's breaker failed", "job", r.jobID, "route", sr.name, "error", err)
		return
	}
	sr.writtenSeq = seq
}

// Cooldown shares a cooldown this engine began on the route: every
// worker's calls to it wait (followRoutes).
func (sr *sharedRoute) Cooldown(until time.Time) {
	sr.mu.Lock()
	if !until.After(sr.state.Cooldown) {
		sr.mu.Unlock()
		return
	}
	sr.state.Cooldown = until
	sr.mu.Unlock()
	r := sr.s.r
	go func() {
		_, err := r.w.c.pool.Exec(context.WithoutCancel(r.w.hard), `UPDATE tenax_routes SET cooldown = GREATEST(cooldown, $3), updated = now()
			WHERE job_id = $1 AND route = $2`, r.jobID, sr.name, until)
		if err != nil {
			r.w.log.Warn("sharing a route's cooldown failed", "job", r.jobID, "route", sr.name, "error", err)
		}
	}()
}

// Wait takes the call's turn in the route's told limits, shared by every
// worker of the job.
func (sr *sharedRoute) Wait(ctx context.Context, tokens int) error {
	if sr.reqInterval > 0 {
		if err := sr.s.take(ctx, routeLimit(sr.name, "requests"), sr.reqInterval, sr.reqBurst, 1); err != nil {
			return err
		}
	}
	if sr.tokInterval > 0 && tokens > 0 {
		if err := sr.s.take(ctx, routeLimit(sr.name, "tokens"), sr.tokInterval, sr.tokBurst, tokens); err != nil {
			return err
		}
	}
	return nil
}

// resetRoutes closes a job's route breakers and ends their cooldowns: a
// resumed job gives every route its chance again, as its breaker.
func (c *Client) resetRoutes(ctx context.Context, jobID string) error {
	if _, err := c.pool.Exec(ctx, `UPDATE tenax_routes SET state = 'closed', open_until = NULL, cooldown = NULL, updated = now()
		WHERE job_id = $1`, jobID); err != nil {
		return fmt.Errorf("worker: closing the route breakers of job %s: %w", jobID, err)
	}
	return nil
}

// RouteState is one route's state shared by the workers of a job.
type RouteState struct {
	// Route names it.
	Route string
	// Open says a worker opened its breaker and none closed it since;
	// OpenUntil is when the workers let their probes through.
	Open      bool
	OpenUntil time.Time
	// Trips counts its openings from closed, for the whole job.
	Trips int
	// Cooldown is when its latest cooldown ends.
	Cooldown time.Time
}

// Routes returns the shared state of each route of a job run by
// workers, by route name; none for a job without routes or not run yet.
func (c *Client) Routes(ctx context.Context, jobID string) ([]RouteState, error) {
	rows, err := c.pool.Query(ctx, `SELECT route, state = 'open', open_until, trips, cooldown FROM tenax_routes WHERE job_id = $1 ORDER BY route`, jobID)
	if err != nil {
		return nil, fmt.Errorf("worker: reading the routes of job %s: %w", jobID, err)
	}
	defer rows.Close()
	var out []RouteState
	for rows.Next() {
		var st RouteState
		var until, cooldown *time.Time
		if err := rows.Scan(&st.Route, &st.Open, &until, &st.Trips, &cooldown); err != nil {
			return nil, fmt.Errorf("worker: reading the routes of job %s: %w", jobID, err)
		}
		st.OpenUntil, st.Cooldown = deref(until), deref(cooldown)
		out = append(out, st)
	}
	return out, rows.Err()
}

// deref is *t, or the zero time for a NULL.
func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
