package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/store"
)

// A job's control requests (store.Controls) are notes in tenax_notes, of
// kind "control", a JSON object each: the notes' index (job_id, kind,
// seq) answers "anything after seq N?" from the index alone, so the run
// asks twice a second for the price of one indexed query, and no table
// or migration of their own is needed.
const controlKind = "control"

var _ store.Controls = (*Store)(nil)

// AppendControl inserts req as a control note of job id, committed before
// it returns; store.ErrNotFound (wrapped) when there is no such job. The
// job's row is locked first (FOR NO KEY UPDATE: the steps' foreign key
// checks do not wait), so that two requests made at once take their seq
// in the order they commit: a reader past seq N never misses a request
// that commits later with a smaller one.
func (s *Store) AppendControl(ctx context.Context, id string, req store.ControlRequest) error {
	if err := req.Check(); err != nil {
		return err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM tenax_jobs WHERE id = $1 FOR NO KEY UPDATE`, id).Scan(&one); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO tenax_notes (job_id, kind, note) VALUES ($1, $2, $3)`, id, controlKind, b)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: job %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("postgres: a control request of job %s: %w", id, err)
	}
	return nil
}

// Controls returns job id's control requests of seq greater than after,
// oldest first, and the seq of the last of them (after when none).
func (s *Store) Controls(ctx context.Context, id string, after int64) ([]store.ControlRequest, int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, note FROM tenax_notes WHERE job_id = $1 AND kind = $2 AND seq > $3 ORDER BY seq`, id, controlKind, after)
	if err != nil {
		return nil, after, fmt.Errorf("postgres: the control requests of job %s: %w", id, err)
	}
	var (
		out  []store.ControlRequest
		seq  int64
		note []byte
	)
	next := after
	if _, err := pgx.ForEachRow(rows, []any{&seq, &note}, func() error {
		next = seq
		var r store.ControlRequest
		if json.Unmarshal(note, &r) == nil && r.Action != "" {
			out = append(out, r)
		}
		return nil
	}); err != nil {
		return nil, after, fmt.Errorf("postgres: the control requests of job %s: %w", id, err)
	}
	return out, next, nil
}

// ControlLocation is "tenax_notes", the table that holds the requests.
func (s *Store) ControlLocation() string { return "tenax_notes" }
