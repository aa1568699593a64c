package worker

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/store/postgres"
)

// Grouped records: the final records of several items are written, their
// (job, idx, round) claimed in tenax_finals and the River jobs whose last
// records they are completed in one transaction, so that a worker pays
// one commit (one WAL flush) for a group instead of one per item. A group
// is due when it holds groupMax records, when every execution under way
// on the runner has put its record in a group (nothing else could join
// it), when the job stops here, or groupWait after its first record,
// whichever comes first; it is written once the group before it is, and
// records that come meanwhile join it. An item whose group did not commit
// (the worker killed, the transaction failed) has no record and a River
// job still running: it is rescued or retried, and run again.
// docs/workers.md tells the figures.
const (
	// groupMax is the most records one group writes.
	groupMax = 128
	// groupWait is the longest a record waits for others to join its
	// group.
	groupWait = 20 * time.Millisecond
)

// pending is one item's final record waiting in a group.
type pending struct {
	x   *execution
	rec postgres.Encoded
	// last is set, as the record joins its commit group, for the last
	// record of its River job's group (groupRun.joined).
	last bool
	// added is set by the group's write: the record was the first for
	// its (job, idx, round) and was added. A duplicate execution's
	// record is not added; its River job is completed all the same.
	added bool
}

// group is the records one transaction writes.
type group struct {
	entries []*pending
	flush   chan struct{} // closed when the group is to be written now
	due     bool          // flush is closed
	done    chan struct{} // closed once the group was written or failed
	err     error
	// prev is the group opened before this one: this one is written once
	// prev is done.
	prev *group
}

// riverID is the River job p's transaction completes: its own for a
// River job of one item, its group's for the last record of a River job
// of several (groupRun.completes); 0 for none.
func (p *pending) riverID() int64 {
	switch {
	case p.x == nil:
		return 0
	case p.x.group != nil:
		return p.x.group.completes(p)
	}
	return p.x.riverID
}

// committer gathers records into groups. The first record of a group
// makes its caller the group's writer (no goroutine of its own, nothing
// to stop); the others wait for the group's outcome.
type committer struct {
	max  int
	wait time.Duration
	// calling counts the executions whose records are still to come.
	calling func() int
	// stop, closed, makes every group write at once.
	stop <-chan struct{}
	// write writes a group's records in one transaction.
	write func(ctx context.Context, entries []*pending) error

	mu   sync.Mutex
	open *group // the group records join, nil when none
	last *group // the group opened last
}

// add puts p in the open group and returns once its group was written,
// with the group's error. Groups are written one after another, in the
// order they were opened: a record's transaction commits after those of
// the records that joined before it, which a River job of several items
// completed with its last record relies on (items.go).
func (c *committer) add(ctx context.Context, p *pending) error {
	c.mu.Lock()
	g := c.open
	writer := g == nil
	if writer {
		g = &group{flush: make(chan struct{}), done: make(chan struct{}), prev: c.last}
		c.open, c.last = g, g
	}
	g.entries = append(g.entries, p)
	if p.x != nil && p.x.group != nil {
		p.last = p.x.group.joined()
	}
	c.checkLocked()
	c.mu.Unlock()
	if !writer {
		<-g.done
		return g.err
	}
	t := time.NewTimer(c.wait)
	select {
	case <-g.flush:
	case <-t.C:
	case <-c.stop:
	}
	t.Stop()
	// The group stays open to new records while the one before it is
	// written: the records that come meanwhile share its commit instead
	// of starting a group of their own.
	if g.prev != nil {
		<-g.prev.done
		g.prev = nil
	}
	c.mu.Lock()
	if c.open == g {
		c.open = nil
	}
	entries := g.entries
	c.mu.Unlock()
	g.err = c.write(ctx, entries)
	if g.err != nil {
		// Before done: the next group, which may hold the last record of
		// a River job these records belong to, must not complete it.
		for _, p := range entries {
			if p.x != nil && p.x.group != nil {
				p.x.group.failed.Store(true)
			}
		}
	}
	close(g.done)
	return g.err
}

// recheck writes the open group now if nothing else could join it: an
// execution left the engine.
func (c *committer) recheck() {
	c.mu.Lock()
	c.checkLocked()
	c.mu.Unlock()
}

// checkLocked makes the open group due, to be written as soon as the
// group before it is, when no execution is left whose record could join
// it; a full group is closed to new records too. c.mu is held.
func (c *committer) checkLocked() {
	g := c.open
	if g == nil {
		return
	}
	full := len(g.entries) >= c.max
	if full {
		c.open = nil
	}
	if !g.due && (full || c.calling() == 0) {
		g.due = true
		close(g.flush)
	}
}

// groupSQL writes a group in one statement, and so in one transaction
// and one round trip: each (job, idx, round) claimed in tenax_finals, the
// records whose claim was new appended to tenax_records, every River job
// of the group completed (as river.JobCompleteTx does: completed and
// finalized, if it is still running; one rescued and finished elsewhere
// is left as it is). It returns the claims that were new. A second entry
// of one (idx, round) in a group adds no second record.
//
// The completion writes river_job itself, the one write to River's
// tables beside the heartbeat's (Worker.heartbeat), because River's API
// cannot do it here: river.JobCompleteTx completes one job per call, by
// statements of its own, and only from inside that job's Work (it takes
// the client from the work context); a group holds the records of many
// executions, written by whichever of them is last, and folding the
// completions into the group's one statement is what made one round
// trip and one commit of a group. Completing each River job with
// JobCompleteTx, in a transaction with its records, was the code before
// groups: 2.4-2.9x fewer items a second and 7x the commits per item
// (docs/benchmarks.md, "Grouped records"). The UPDATE sets what
// JobCompleteTx sets (state, finalized_at) under the same condition
// (still running); River's own rows stay River's otherwise.
//
// The group commits durably even where the session, role or database
// turned synchronous_commit off (it is set to local for this transaction
// alone): River's completer keeps the completions it was handed and
// replays them after a crash of the server, so a group the crash lost
// would leave its items completed without their records, lost to the
// workers (docs/decisions.md).
const groupSQL = `
WITH item AS (
	SELECT * FROM unnest($2::bigint[], $3::integer[], $4::boolean[], $5::json[], $6::bigint[])
		WITH ORDINALITY AS i (idx, round, failed, record, river_id, n)
), claimed AS (
	INSERT INTO tenax_finals (job_id, idx, round)
	SELECT DISTINCT $1, idx, round FROM item
	WHERE set_config('synchronous_commit', CASE current_setting('synchronous_commit')
		WHEN 'off' THEN 'local' ELSE current_setting('synchronous_commit') END, true) <> ''
	ON CONFLICT DO NOTHING
	RETURNING idx, round
), recorded AS (
	INSERT INTO tenax_records (job_id, idx, failed, record)
	SELECT $1, i.idx, i.failed, i.record
	FROM (SELECT DISTINCT ON (idx, round) * FROM item ORDER BY idx, round, n) i JOIN claimed USING (idx, round)
	ORDER BY i.n
), completed AS (
	UPDATE river_job SET state = 'completed', finalized_at = now()
	WHERE id IN (SELECT river_id FROM item) AND state = 'running'
)
SELECT idx, round FROM claimed`

// writeGroup writes a group of the runner's records (groupSQL), setting
// each entry's added. Tried again while the connection is lost: a
// statement whose commit was lost with it finds its claims taken on the
// next try and adds no second record.
func (r *runner) writeGroup(ctx context.Context, entries []*pending) error {
	n := len(entries)
	idxs, rounds, failed := make([]int64, n), make([]int32, n), make([]bool, n)
	docs, riverIDs := make([]string, n), make([]int64, n)
	for i, p := range entries {
		idxs[i], rounds[i], failed[i] = p.rec.Idx, int32(p.x.round), p.rec.Failed
		docs[i], riverIDs[i] = p.rec.Doc, p.riverID()
	}
	type claim struct {
		idx   int64
		round int32
	}
	return r.w.withDB(ctx, "recording items", func(ctx context.Context) error {
		rows, err := r.w.c.pool.Query(ctx, groupSQL, r.jobID, idxs, rounds, failed, docs, riverIDs)
		if err != nil {
			return err
		}
		claimed := map[claim]bool{}
		var c claim
		if _, err := pgx.ForEachRow(rows, []any{&c.idx, &c.round}, func() error {
			claimed[c] = true
			return nil
		}); err != nil {
			return err
		}
		for _, p := range entries {
			k := claim{p.rec.Idx, int32(p.x.round)}
			p.added = claimed[k]
			delete(claimed, k) // a second entry of (idx, round) is a duplicate
		}
		return nil
	})
}
