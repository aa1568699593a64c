package worker

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// tenax_inputs is where the items' inputs live, one row per (job, idx),
// written once when the job is enqueued (by its own COPY, in the same
// transaction as the items' River jobs) and read by the workers. River's
// arguments carry only {job, idx, round}: every key and value of a River
// job's arguments goes into river_job's GIN index, and with the inputs in
// them that index was half of PostgreSQL's work at enqueue. A round of
// `resume --retry-failures` inserts River jobs only: the inputs are there.
//
// There is no foreign key to tenax_jobs: its check would be a lookup per
// inserted row. A trigger on tenax_jobs deletes a deleted job's inputs
// instead (worker/migration). The input is
// bytea: the item byte for byte as it was read (jsonb would reorder its
// keys), and nothing for PostgreSQL to parse or index. The table is made
// by worker/migration.

// inputColumns are the columns the enqueue's COPY writes.
var inputColumns = []string{"job_id", "idx", "id", "input", "bad"}

// storedInput is one row of tenax_inputs.
type storedInput struct {
	idx   int
	id    string
	input []byte
	// bad is the error of an input line that is not a valid item; the
	// worker records it as an item failure without a call.
	bad string
}

// inputsCopy is a new job's inputs in PostgreSQL's binary COPY format,
// rows of inputColumns: the goroutine that reads the input encodes each
// batch's rows while the connections insert the batches before it, and a
// connection sends the bytes as they are, without pgx's encoding of a
// value at a time through interfaces.
type inputsCopy struct {
	buf  []byte
	rows int
	// size is what the buffer is made to hold at first: the size of the
	// batch before, so that it is not grown and copied row by row.
	size int
}

// copyHeader starts a binary COPY: the signature, no flags, no header
// extension.
const copyHeader = "PGCOPY\n\xff\r\n\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00"

// add appends in as a row of job jobID.
func (c *inputsCopy) add(jobID string, in storedInput) {
	if c.buf == nil {
		c.buf = append(make([]byte, 0, max(c.size+c.size/8, 64<<10)), copyHeader...)
	}
	c.buf = binary.BigEndian.AppendUint16(c.buf, uint16(len(inputColumns)))
	c.buf = appendCopyField(c.buf, jobID)
	c.buf = binary.BigEndian.AppendUint32(c.buf, 8)
	c.buf = binary.BigEndian.AppendUint64(c.buf, uint64(in.idx))
	c.buf = appendCopyText(c.buf, in.id)
	c.buf = appendCopyField(c.buf, in.input)
	c.buf = appendCopyText(c.buf, in.bad)
	c.rows++
}

// send copies the rows into tenax_inputs on tx's connection.
func (c *inputsCopy) send(ctx context.Context, tx pgx.Tx) error {
	if c.rows == 0 {
		return nil
	}
	data := binary.BigEndian.AppendUint16(c.buf, 0xffff) // the trailer: -1
	tag, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(data),
		`COPY tenax_inputs (`+strings.Join(inputColumns, ", ")+`) FROM STDIN (FORMAT binary)`)
	if err != nil {
		return err
	}
	if n := tag.RowsAffected(); n != int64(c.rows) {
		return fmt.Errorf("COPY stored %d inputs of %d", n, c.rows)
	}
	return nil
}

// appendCopyText appends s as a text field of a binary COPY row: NULL
// when empty, as the resumes' insertInputs stores it.
func appendCopyText(buf []byte, s string) []byte {
	if s == "" {
		return binary.BigEndian.AppendUint32(buf, 0xffffffff) // NULL: -1
	}
	return appendCopyField(buf, validText(s))
}

// appendCopyField appends v as a field of a binary COPY row: its length,
// then its bytes (text and bytea are sent as they are).
func appendCopyField[T string | []byte](buf []byte, v T) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(v)))
	return append(buf, v...)
}

// validText is s as PostgreSQL's text takes it: invalid UTF-8 and NUL
// replaced, as encoding/json replaced them when the input travelled in
// River's arguments.
func validText(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// insertInputs inserts rows into tenax_inputs with INSERT … ON CONFLICT
// (job_id, idx) and onConflict: the resumes' way, which another resume
// running at the same time cannot make fail on a duplicate key, as COPY
// would.
func insertInputs(ctx context.Context, tx pgx.Tx, jobID string, rows []storedInput, onConflict string) error {
	if len(rows) == 0 {
		return nil
	}
	idx := make([]int64, len(rows))
	ids := make([]string, len(rows))
	inputs := make([][]byte, len(rows))
	bads := make([]string, len(rows))
	for i, r := range rows {
		idx[i], ids[i], inputs[i], bads[i] = int64(r.idx), validText(r.id), r.input, validText(r.bad)
	}
	_, err := tx.Exec(ctx, `INSERT INTO tenax_inputs (job_id, idx, id, input, bad)
		SELECT $1, i, NULLIF(d, ''), b, NULLIF(e, '') FROM unnest($2::bigint[], $3::text[], $4::bytea[], $5::text[]) AS u (i, d, b, e)
		ON CONFLICT (job_id, idx) `+onConflict, jobID, idx, ids, inputs, bads)
	return err
}

// errNoInput is an item whose River job has no input in tenax_inputs.
var errNoInput = errors.New("its input is not in tenax_inputs")

// errNoInputs is errNoInput for several items.
var errNoInputs = errors.New("their inputs are not in tenax_inputs")

// inputLoader reads the inputs of a job's items for the River executions
// of a worker, many at once: an execution asks for its items' inputs, and
// the asks that arrive while a read is under way are read together by the
// next, so the River jobs fetched together cost a query or two, not one
// each.
type inputLoader struct {
	c     *Client
	ctx   context.Context
	jobID string
	// resumes is the runner's: the read that finds the job resumed since
	// answers errResumed, so no item of a run built before a resume
	// starts after it.
	resumes int

	mu      sync.Mutex
	asks    []inputAsk
	reading bool
}

// inputAsk is one execution's ask: the items of idxs in round.
type inputAsk struct {
	idxs  []int
	round int
	reply chan<- inputReply
}

type inputReply struct {
	items []groupInput
	err   error
}

// groupInput is one item as an execution reads it.
type groupInput struct {
	in       storedInput
	recorded bool // the round has its final record (no input is read)
	missing  bool // tenax_inputs has no input for it
}

// load returns the stored input of item idx.
func (l *inputLoader) load(idx int) (storedInput, error) {
	items, err := l.group([]int{idx}, 0)
	switch {
	case err != nil:
		return storedInput{}, err
	case items[0].missing:
		return storedInput{}, fmt.Errorf("worker: item %d of job %s: %w", idx, l.jobID, errNoInput)
	}
	return items[0].in, nil
}

// group returns the items of idxs in their order: their inputs, and
// whether round has their final records (round 0: never asked). It
// answers errResumed when the job was resumed since the runner was built.
func (l *inputLoader) group(idxs []int, round int) ([]groupInput, error) {
	reply := make(chan inputReply, 1)
	l.mu.Lock()
	l.asks = append(l.asks, inputAsk{idxs: idxs, round: round, reply: reply})
	start := !l.reading
	l.reading = true
	l.mu.Unlock()
	if start {
		go l.read()
	}
	r := <-reply
	return r.items, r.err
}

// read answers the asks waiting, one query for all of them, until none
// waits.
func (l *inputLoader) read() {
	for {
		l.mu.Lock()
		asks := l.asks
		l.asks = nil
		if len(asks) == 0 {
			l.reading = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		found, err := l.query(asks)
		for _, a := range asks {
			r := inputReply{err: err}
			if err == nil {
				r.items = make([]groupInput, len(a.idxs))
				for i, idx := range a.idxs {
					r.items[i] = found[itemRound{idx, a.round}]
				}
			}
			a.reply <- r
		}
	}
}

// itemRound is an item in a round.
type itemRound struct{ idx, round int }

// groupInputsQuery reads the inputs of the items $2 in rounds $3 (one
// read for the groups of several executions), and whether each has its
// final record that round. Each item's rows are looked up by their
// primary key in a LATERAL subquery that LIMIT keeps from being flattened
// into a join: joined instead, on a job whose tables have no statistics
// yet (every job just enqueued), the planner scanned all of the job's
// inputs and final records for each read and filtered them — 20,000 rows
// of each and 5.6 ms a read on a job of 20,000 against 0.2 ms by key, and
// a million rows a read on a job of a million
// (TestAGroupsInputsAreReadByTheirKeys).
const groupInputsQuery = `SELECT u.idx, u.round, i.idx IS NULL, coalesce(i.id, ''),
		CASE WHEN f.idx IS NULL THEN i.input END, coalesce(i.bad, ''), f.idx IS NOT NULL,
		(SELECT resumes FROM tenax_queues WHERE job_id = $1)
	FROM unnest($2::bigint[], $3::integer[]) AS u (idx, round)
	LEFT JOIN LATERAL (SELECT idx, id, input, bad FROM tenax_inputs
		WHERE job_id = $1 AND idx = u.idx LIMIT 1) i ON true
	LEFT JOIN LATERAL (SELECT idx FROM tenax_finals
		WHERE job_id = $1 AND idx = u.idx AND round = u.round LIMIT 1) f ON true`

func (l *inputLoader) query(asks []inputAsk) (map[itemRound]groupInput, error) {
	var idxs []int64
	var rounds []int32
	for _, a := range asks {
		for _, idx := range a.idxs {
			idxs = append(idxs, int64(idx))
			rounds = append(rounds, int32(a.round))
		}
	}
	rows, err := l.c.pool.Query(l.ctx, groupInputsQuery, l.jobID, idxs, rounds)
	if err != nil {
		return nil, fmt.Errorf("worker: reading the inputs of job %s: %w", l.jobID, err)
	}
	found := make(map[itemRound]groupInput, len(idxs))
	var (
		gi      groupInput
		idx     int64
		round   int32
		resumes *int32
	)
	_, err = pgx.ForEachRow(rows, []any{&idx, &round, &gi.missing, &gi.in.id, &gi.in.input, &gi.in.bad, &gi.recorded, &resumes}, func() error {
		if resumes != nil && int(*resumes) != l.resumes {
			return errResumed
		}
		gi.in.idx = int(idx)
		found[itemRound{int(idx), int(round)}] = gi
		gi.in.input = nil // a new slice for the next row
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("worker: reading the inputs of job %s: %w", l.jobID, err)
	}
	return found, nil
}
