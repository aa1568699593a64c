package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/tenaxhq/tenax/input"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/tracing"
	"github.com/tenaxhq/tenax/worker/workertype"
)

// ItemsKind is the River job kind of a group of a job's items, up to
// maxGroupItems of them (GroupItems): its arguments (ItemsArgs) say which
// job, round and items, and the items' inputs are in tenax_inputs. One
// River job per group instead of per item divides River's own work — its
// row, its fetch, its completion — by the group's size, at enqueue and on
// the workers. A worker from before ItemsKind does not know it: River
// fails such an execution as an unknown kind and runs it again later, on
// another worker.
const ItemsKind = "tenax_items"

// ItemKind is the River job kind of one tenax item, as tenax enqueued
// items before ItemsKind: its arguments say which job and round, its tag
// (IdxTag) which item. Workers still run them.
const ItemKind = "tenax_item_v2"

// LegacyItemKind is the River job kind of the items tenax enqueued before
// ItemKind, with the item's idx and input in the arguments
// (LegacyItemArgs). Workers still run them.
const LegacyItemKind = "tenax_item"

// MaxAttempts is how many times River itself runs one item's River job
// before discarding it. tenax's retries, backoff and heal loop all happen
// inside one execution; River runs a job again only when an execution
// died (a killed worker's job, rescued) or panicked. A discarded item is
// left pending, and `tenax resume` enqueues it again.
const MaxAttempts = 10

// insertBatch is how many items one transaction inserts: their inputs
// into tenax_inputs and their River jobs, each through a COPY.
const insertBatch = 10_000

// insertConns is how many batches are inserted at once, each on a
// connection of its own, while the input is read: PostgreSQL writes the
// rows and their indexes on one core per connection, and reading the
// input and encoding the rows overlaps with them instead of coming
// between them.
const insertConns = 2

// ItemsArgs is a group of a job's items as a River job's arguments.
type ItemsArgs struct {
	Job   string `json:"job"`
	Round int    `json:"round"`
	// Items are the items' idx as an item set: ascending runs of
	// consecutive idx, "0-31" or "3,7,12-15" — one string, one entry of
	// the GIN index River keeps on its arguments, where a list would be
	// one per item.
	Items string `json:"items"`
	// N is how many items Items names, for counting a job's items by the
	// state of their River jobs in SQL.
	N int `json:"n"`
}

// Kind returns ItemsKind.
func (ItemsArgs) Kind() string { return ItemsKind }

// maxGroupItems is the most items one River job holds. Each River job
// costs PostgreSQL its row's updates at fetch and completion (every index
// of river_job, the two GIN indexes included) and a worker an execution
// and a read of inputs: at 16 instead of 8, one worker at zero latency
// used 6-20% less CPU and PostgreSQL 13-27% less per item, with fewer
// commits (docs/benchmarks.md).
// A worker holds itemsPerPlace items per place whatever the size, so a
// killed worker leaves no more items to the rescue; a job of fewer items
// is spread over fewer River jobs, so over fewer workers at a time.
const maxGroupItems = 16

// GroupItems is how many items one River job of a job with spec s holds:
// maxGroupItems, or the spec's concurrency.max when lower, so that a
// worker that runs the spec's concurrency holds a few River jobs at once
// rather than one larger than what it runs; one for a job with check-ins,
// which stop the job after the items taken when a check-in came due.
func GroupItems(s *spec.Spec) int {
	if s.CheckinEvery > 0 {
		return 1
	}
	return max(1, min(maxGroupItems, s.Concurrency.Max))
}

// ItemArgs is one item of a job as a River job's arguments, as tenax
// enqueued items before ItemsKind: which job, in which round. The item's
// idx is in the River job's tag (IdxTag), not in the arguments. A River
// job with no idx tag runs the item of its Idx argument.
type ItemArgs struct {
	Job   string `json:"job"`
	Round int    `json:"round"`
	Idx   int    `json:"idx,omitempty"`
}

// Kind returns ItemKind.
func (ItemArgs) Kind() string { return ItemKind }

// LegacyItemArgs are the arguments of the River jobs that tenax enqueued
// before ItemKind: the item and its input in the arguments.
type LegacyItemArgs struct {
	Job   string          `json:"job"`
	Idx   int             `json:"idx"`
	Round int             `json:"round"`
	ID    string          `json:"id,omitempty"`
	Input json.RawMessage `json:"input"`
	// Bad is the error of an input line that is not a valid item.
	Bad string `json:"bad,omitempty"`
}

// Kind returns LegacyItemKind.
func (LegacyItemArgs) Kind() string { return LegacyItemKind }

// idxTagPrefix starts the tag that holds an item's idx.
const idxTagPrefix = "idx-"

// IdxTag is the River tag of item idx's River jobs: "idx-" and the idx.
// River does not index tags.
func IdxTag(idx int) string { return idxTagPrefix + strconv.Itoa(idx) }

// idxOfTags returns the idx in a River job's tags.
func idxOfTags(tags []string) (int, bool) {
	for _, t := range tags {
		if rest, ok := strings.CutPrefix(t, idxTagPrefix); ok {
			if idx, err := strconv.Atoi(rest); err == nil {
				return idx, true
			}
		}
	}
	return 0, false
}

// idxSQL is the idx of a River item job in SQL, of either kind.
const idxSQL = `coalesce((SELECT substr(t, 5)::bigint FROM unnest(tags) t WHERE t LIKE 'idx-%' LIMIT 1), (args->>'idx')::bigint)`

// Enqueued says what Enqueue or Requeue inserted.
type Enqueued = workertype.Enqueued

// Enqueue makes a job created by job.Create runnable by workers: it keeps
// the spec source for them and inserts every item of the job (the input's
// first job.Options.Limit items, when set): its input
// into tenax_inputs and a River job of the job's own queue, in batches
// through COPY, each batch one transaction.
func (c *Client) Enqueue(ctx context.Context, cr *job.Created) (Enqueued, error) {
	start := time.Now()
	m := cr.Job.Manifest()
	q := queueName(m.ID)
	group := GroupItems(cr.Spec)
	_, err := c.pool.Exec(ctx,
		`INSERT INTO tenax_queues (job_id, queue, spec_path, spec_source, format, group_items) VALUES ($1, $2, $3, $4, $5, $6)`,
		m.ID, q, m.SpecPath, string(cr.SpecSource), string(cr.Format), group)
	if err != nil {
		return Enqueued{}, fmt.Errorf("worker: recording job %s for workers: %w", m.ID, err)
	}
	// A --limit run's job holds the input's first m.Items items.
	n, err := c.insertItems(ctx, m.ID, q, 1, group, cr.InputPath, cr.Format, cr.Scanned, func(idx int) want {
		if idx >= m.Items {
			return wantStop
		}
		return wantCopy
	})
	res := Enqueued{JobID: m.ID, Queue: q, Round: 1, Items: n, Elapsed: time.Since(start)}
	if err != nil {
		return res, err
	}
	return res, nil
}

// want is what insertItems does with one item of the input.
type want int

const (
	// wantSkip inserts nothing.
	wantSkip want = iota
	// wantRun inserts a River job: the item's input is stored already.
	wantRun
	// wantCopy stores the item's input through COPY and inserts a River
	// job: a new job, whose inputs nothing else writes.
	wantCopy
	// wantStore stores the item's input unless another resume running
	// at the same time just did, and inserts a River job.
	wantStore
	// wantReplace replaces the item's stored input (the input changed,
	// and the resume was forced) and inserts a River job.
	wantReplace
	// wantStop ends the input there: the items of a --limit run.
	wantStop
)

// batch is one transaction of insertItems.
type batch struct {
	jobs []river.InsertManyParams
	// items counts the items of the River jobs.
	items   int
	copy    inputsCopy    // inputs of a new job, through COPY
	store   []storedInput // inputs a resume stores if missing
	replace []storedInput // inputs a resume replaces
}

// insertItems inserts the items of the input as wants says, groupItems
// to a River job: one goroutine reads the input into batches, insertConns
// others insert them. The first error stops them all; the batches
// inserted before it stay. The input is read checked against scanned, the
// scan the job hashed (input.OpenScanned): an input changed while it is
// enqueued stops the enqueue with input.ErrChanged at the first changed
// block, and no item of that block is stored, as a run on one machine
// stops.
func (c *Client) insertItems(ctx context.Context, jobID, queue string, round, groupItems int, inPath string, format input.Format, scanned input.Summary, wants func(idx int) want) (int, error) {
	r, err := input.OpenScanned(inPath, format, scanned)
	if err != nil {
		return 0, fmt.Errorf("worker: %w", err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	batches := make(chan *batch, insertConns)
	var (
		inserted atomic.Int64
		wg       sync.WaitGroup
	)
	for range insertConns {
		wg.Go(func() {
			for b := range batches {
				if err := c.insertBatch(ctx, jobID, b); err != nil {
					cancel(fmt.Errorf("worker: inserting items of job %s: %w", jobID, err))
					return
				}
				inserted.Add(int64(b.items))
			}
		})
	}
	g := grouper{jobID: jobID, queue: queue, round: round, size: max(1, groupItems), meta: tracing.Metadata(ctx)}
	readErr := g.read(ctx, r, wants, batches)
	close(batches)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return int(inserted.Load()), err
	}
	return int(inserted.Load()), readErr
}

// insertBatch inserts one batch in one transaction, so that an item has
// its River job only together with its input, and an enqueue that stops
// midway leaves whole batches behind.
func (c *Client) insertBatch(ctx context.Context, jobID string, b *batch) error {
	return pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if err := b.copy.send(ctx, tx); err != nil {
			return fmt.Errorf("storing inputs: %w", err)
		}
		if err := insertInputs(ctx, tx, jobID, b.store, `DO NOTHING`); err != nil {
			return fmt.Errorf("storing inputs: %w", err)
		}
		if err := insertInputs(ctx, tx, jobID, b.replace, `DO UPDATE SET id = excluded.id, input = excluded.input, bad = excluded.bad`); err != nil {
			return fmt.Errorf("replacing inputs: %w", err)
		}
		if _, err := c.river.InsertManyFastTx(ctx, tx, b.jobs); err != nil {
			return fmt.Errorf("inserting River jobs: %w", err)
		}
		return nil
	})
}

// grouper reads an input into batches of River jobs, size items to a
// River job (ItemsArgs); a group never spans two batches, so that each
// River job is inserted with its items' inputs.
type grouper struct {
	jobID, queue string
	round, size  int
	// meta is the span of the run that enqueues, for the workers' item
	// spans to hang under; nil when it traces nothing.
	meta []byte

	b    *batch
	set  itemSet
	opts *river.InsertOpts // one value for every River job
}

// read reads the input into batches until its end, an error, or ctx is
// done (an insert failed).
func (g *grouper) read(ctx context.Context, r *input.Reader, wants func(idx int) want, out chan<- *batch) error {
	g.b = &batch{}
	g.opts = &river.InsertOpts{Queue: g.queue, MaxAttempts: MaxAttempts, Metadata: g.meta}
	send := func() bool {
		g.closeGroup()
		if g.b.items == 0 {
			return true
		}
		select {
		case out <- g.b:
			g.b = &batch{copy: inputsCopy{size: len(g.b.copy.buf)}}
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		it, err := r.NextRaw()
		var le *input.LineError
		bad := ""
		switch {
		case errors.Is(err, io.EOF):
			send()
			return nil
		case errors.As(err, &le):
			bad = le.Error()
		case err != nil:
			return fmt.Errorf("worker: reading the input: %w", err)
		}
		w := wants(it.Idx)
		if w == wantStop {
			send()
			return nil
		}
		if w == wantSkip {
			continue
		}
		g.set.add(it.Idx)
		g.b.items++
		if g.set.n == g.size {
			g.closeGroup()
		}
		in := storedInput{idx: it.Idx, id: it.ID, input: it.Raw, bad: bad}
		switch w {
		case wantCopy:
			g.b.copy.add(g.jobID, in)
		case wantStore:
			g.b.store = append(g.b.store, in)
		case wantReplace:
			g.b.replace = append(g.b.replace, in)
		}
		if g.b.items >= insertBatch && !send() {
			return nil
		}
	}
}

// closeGroup makes the items read since the last group a River job of
// the batch.
func (g *grouper) closeGroup() {
	if g.set.n == 0 {
		return
	}
	if g.b.jobs == nil {
		g.b.jobs = make([]river.InsertManyParams, 0, insertBatch/g.size+1)
	}
	args := ItemsArgs{Job: g.jobID, Round: g.round, Items: g.set.String(), N: g.set.n}
	g.b.jobs = append(g.b.jobs, river.InsertManyParams{Args: args, InsertOpts: g.opts})
	g.set.reset()
}

// RequeueOptions are what `tenax resume` takes for a job run by workers.
type RequeueOptions = workertype.RequeueOptions

// ErrNotQueued is returned for a job that was not enqueued for workers.
var ErrNotQueued = workertype.ErrNotQueued

// refreshSpec stores the job's spec file as it is now, when it is readable
// here and changed since it was stored, so that a resume runs the spec as
// edited (a budget raised, a prompt fixed), as a resume on one machine
// does: workers build a job's task from the stored spec whenever they
// start on it again (a new worker, or one whose run of the job stopped at
// its budget or breaker). A spec that no longer parses is refused; one
// that is not on this machine leaves the stored spec.
func (c *Client) refreshSpec(ctx context.Context, jobID string) error {
	var path, stored string
	if err := c.pool.QueryRow(ctx, `SELECT spec_path, spec_source FROM tenax_queues WHERE job_id = $1`, jobID).Scan(&path, &stored); err != nil {
		return fmt.Errorf("worker: job %s: %w", jobID, err)
	}
	source, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && string(source) == stored) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("worker: reading the spec of job %s: %w", jobID, err)
	}
	s, err := spec.Parse(path, source, filepath.Dir(path), os.LookupEnv)
	if err != nil {
		return fmt.Errorf("the spec %s changed since job %s was created and no longer parses: %w", path, jobID, err)
	}
	// The items enqueued from now on are grouped for the spec as edited
	// (a check-in added runs them one to a River job).
	if _, err := c.pool.Exec(ctx, `UPDATE tenax_queues SET spec_source = $2, group_items = $3 WHERE job_id = $1`, jobID, string(source), GroupItems(s)); err != nil {
		return fmt.Errorf("worker: storing the spec of job %s: %w", jobID, err)
	}
	return nil
}

// Requeue enqueues again the items of a job that have no record and no
// River job that could still run (a job River discarded, an enqueue that
// was interrupted), and with RetryFailures the failed ones in a new round.
// Only River jobs are inserted for items whose input is stored already;
// an interrupted enqueue's missing inputs are stored, and a forced resume
// of a changed input replaces the inputs of the items it enqueues. It
// closes the job's shared breaker and resumes its queue.
func (c *Client) Requeue(ctx context.Context, jobID string, opts RequeueOptions) (Enqueued, error) {
	start := time.Now()
	var queue, format string
	var round int
	err := c.pool.QueryRow(ctx, `SELECT queue, round, format FROM tenax_queues WHERE job_id = $1`, jobID).Scan(&queue, &round, &format)
	if errors.Is(err, pgx.ErrNoRows) {
		return Enqueued{}, fmt.Errorf("worker: job %s: %w", jobID, ErrNotQueued)
	}
	if err != nil {
		return Enqueued{}, fmt.Errorf("worker: job %s: %w", jobID, err)
	}
	j, err := c.store.Open(ctx, jobID)
	if err != nil {
		return Enqueued{}, err
	}
	defer j.Close()
	if err := c.refreshSpec(ctx, jobID); err != nil {
		return Enqueued{}, err
	}
	m := j.Manifest()
	scanned, changed, err := checkResumedInput(ctx, j, &m, input.Format(format), opts.Force)
	if err != nil {
		return Enqueued{}, err
	}
	outcomes, err := j.Outcomes(ctx)
	if err != nil {
		return Enqueued{}, err
	}
	live, err := c.liveItems(ctx, jobID, queue)
	if err != nil {
		return Enqueued{}, err
	}
	_, failed, _ := outcomes.Count(m.Items)
	if opts.RetryFailures && failed > 0 {
		if err := c.pool.QueryRow(ctx, `UPDATE tenax_queues SET round = round + 1 WHERE job_id = $1 RETURNING round`, jobID).Scan(&round); err != nil {
			return Enqueued{}, fmt.Errorf("worker: job %s: %w", jobID, err)
		}
	}
	stored, err := c.storedInputs(ctx, jobID, m.Items)
	if err != nil {
		return Enqueued{}, err
	}
	wants := func(idx int) want {
		if live[idx] {
			return wantSkip
		}
		switch outcomes.Get(idx) {
		case store.Succeeded:
			return wantSkip
		case store.Failed:
			if !opts.RetryFailures {
				return wantSkip
			}
		}
		switch {
		case !stored(idx):
			return wantStore
		case changed:
			return wantReplace
		}
		return wantRun
	}
	if err := c.reopen(ctx, j, queue); err != nil {
		return Enqueued{}, err
	}
	var group int
	if err := c.pool.QueryRow(ctx, `SELECT group_items FROM tenax_queues WHERE job_id = $1`, jobID).Scan(&group); err != nil {
		return Enqueued{}, fmt.Errorf("worker: job %s: %w", jobID, err)
	}
	n, err := c.insertItems(ctx, jobID, queue, round, group, m.InputPath, input.Format(format), scanned, wants)
	return Enqueued{JobID: jobID, Queue: queue, Round: round, Items: n, Elapsed: time.Since(start)}, err
}

// checkResumedInput checks the job's input against the hash its manifest
// holds: a changed input is refused unless forced, and the manifest
// learns the whole input's hash and count (after a --limit run, or a
// forced change). changed reports a forced change.
//
// It returns the scan too: the requeue reads the input checked against it.
func checkResumedInput(ctx context.Context, j store.Job, m *store.Manifest, format input.Format, force bool) (sum input.Summary, changed bool, err error) {
	// A job created by a --limit run hashed only a prefix of its input
	// (m.InputBytes): check that prefix; the resume then runs the rest of
	// the input, as a resume on one machine does.
	sum, err = input.Scan(ctx, m.InputPath, format, input.ScanOptions{PrefixBytes: m.InputBytes})
	if err != nil {
		return sum, false, fmt.Errorf("worker: the job's input: %w", err)
	}
	was := sum.SHA256
	if m.InputBytes > 0 {
		was = sum.PrefixSHA256 // "" when the file is now shorter than the prefix
	}
	if was != m.InputSHA256 && !force {
		return sum, false, fmt.Errorf("the input %s changed since job %s was created; resuming would mix results of two inputs. Pass --force to resume anyway", m.InputPath, m.ID)
	}
	if m.InputBytes > 0 || was != m.InputSHA256 {
		if err := j.UpdateManifest(ctx, func(jm *store.Manifest) {
			jm.InputSHA256, jm.InputBytes, jm.Items = sum.SHA256, 0, sum.Items
		}); err != nil {
			return sum, false, err
		}
		m.Items = sum.Items
	}
	return sum, was != m.InputSHA256, nil
}

// liveItems returns the items of the job's queue whose River job could
// still run.
func (c *Client) liveItems(ctx context.Context, jobID, queue string) (map[int]bool, error) {
	live := map[int]bool{}
	rows, err := c.pool.Query(ctx, `SELECT coalesce(args->>'items', ''), coalesce(`+idxSQL+`, 0) FROM river_job
		WHERE queue = $1 AND state IN ('available', 'running', 'retryable', 'scheduled', 'pending')`, queue)
	if err != nil {
		return nil, fmt.Errorf("worker: reading the queue of job %s: %w", jobID, err)
	}
	var (
		items string
		idx   int64
	)
	if _, err := pgx.ForEachRow(rows, []any{&items, &idx}, func() error {
		if items == "" {
			live[int(idx)] = true
			return nil
		}
		// A River job whose item set does not parse runs nothing (its
		// execution is cancelled): its items are not live.
		idxs, _ := parseItemSet(items)
		for _, i := range idxs {
			live[i] = true
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("worker: reading the queue of job %s: %w", jobID, err)
	}
	return live, nil
}

// reopen resets what said the job stopped: its budget, its breaker and an
// operator's stop, and its manifest's state.
func (c *Client) reopen(ctx context.Context, j store.Job, queue string) error {
	jobID := j.Manifest().ID
	// Before the budget, breaker and state that said the job stopped are
	// reset: a worker's run of the job built before this resume learns
	// of it (runner.resumed) rather than going on with the spec it was
	// built from, and cannot write its stop over the resumed state.
	if _, err := c.pool.Exec(ctx, `UPDATE tenax_queues SET resumes = resumes + 1 WHERE job_id = $1`, jobID); err != nil {
		return fmt.Errorf("worker: job %s: %w", jobID, err)
	}
	if err := c.resetBudget(ctx, jobID); err != nil {
		return err
	}
	// A resume goes on after an operator's stop (an abort at a check-in,
	// tenax stop), and unpaused: a pause holds a running job only.
	if _, err := c.pool.Exec(ctx, `UPDATE tenax_breakers SET stopped = '', paused_by = '', paused_at = NULL WHERE job_id = $1`, jobID); err != nil {
		return fmt.Errorf("worker: job %s: %w", jobID, err)
	}
	if err := c.resetRoutes(ctx, jobID); err != nil {
		return err
	}
	if err := c.resetBreaker(ctx, jobID, queue); err != nil {
		return err
	}
	return j.UpdateManifest(ctx, func(m *store.Manifest) { m.State, m.StopReason, m.Paused = store.StateRunning, "", nil })
}

// storedInputs returns whether each idx of a job with items items has its
// input in tenax_inputs: a count when all have (the usual case), the idx
// themselves otherwise.
func (c *Client) storedInputs(ctx context.Context, jobID string, items int) (func(idx int) bool, error) {
	var n int
	if err := c.pool.QueryRow(ctx, `SELECT count(*) FROM tenax_inputs WHERE job_id = $1`, jobID).Scan(&n); err != nil {
		return nil, fmt.Errorf("worker: reading the inputs of job %s: %w", jobID, err)
	}
	if n >= items {
		return func(int) bool { return true }, nil
	}
	stored := make([]bool, items)
	rows, err := c.pool.Query(ctx, `SELECT idx FROM tenax_inputs WHERE job_id = $1`, jobID)
	if err != nil {
		return nil, fmt.Errorf("worker: reading the inputs of job %s: %w", jobID, err)
	}
	var idx int64
	if _, err := pgx.ForEachRow(rows, []any{&idx}, func() error {
		if idx >= 0 && idx < int64(items) {
			stored[idx] = true
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("worker: reading the inputs of job %s: %w", jobID, err)
	}
	return func(idx int) bool { return idx < items && stored[idx] }, nil
}
