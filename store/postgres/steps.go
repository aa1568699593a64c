package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tenaxhq/tenax/store"
)

// A job's agent steps (store.StepLog) are notes in tenax_notes, of kind
// "agent-steps:<idx>": the notes' index (job_id, kind, seq) reads one
// item's in order, and no table or migration of their own is needed.
const stepsKind = "agent-steps:"

var _ store.StepLog = (*Job)(nil)

// AppendSteps inserts entries as idx's steps in one statement, committed
// before it returns.
func (j *Job) AppendSteps(ctx context.Context, idx int, entries ...[]byte) error {
	id, err := j.check(true)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	for _, e := range entries {
		if err := store.CheckStep(e); err != nil {
			return err
		}
	}
	kind := stepsKind + strconv.Itoa(idx)
	if _, err := j.pool.Exec(ctx, `INSERT INTO tenax_notes (job_id, kind, note) SELECT $1, $2, e FROM unnest($3::bytea[]) WITH ORDINALITY AS t(e, n) ORDER BY n`,
		id, kind, entries); err != nil {
		return fmt.Errorf("postgres: the steps of item %d of job %s: %w", idx, id, err)
	}
	return nil
}

// Steps reads idx's steps in the order they were appended: the notes of
// its kind.
func (j *Job) Steps(ctx context.Context, idx int) ([][]byte, error) {
	out, err := j.Notes(ctx, stepsKind+strconv.Itoa(idx))
	if err != nil {
		return nil, fmt.Errorf("postgres: the steps of item %d: %w", idx, err)
	}
	return out, nil
}

// StepsLocation is "tenax_notes", the table that holds the steps.
func (j *Job) StepsLocation() string { return "tenax_notes" }
