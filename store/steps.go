package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// StepLog is what a Job offers to keep an agent item's steps as they
// happen (docs/agents.md): for each idx, an append-only log of entries —
// the model's answers, the marks of tools started, their results — so
// that a run resumed after a crash replays them instead of paying for a
// model call or running a tool again. Every store of this module offers
// one: the JSONL job's steps.jsonl in its directory, PostgreSQL's rows
// in tenax_notes, and the in-memory store's.
//
// An entry is one compact JSON value (no newline), which the log keeps
// as it is given; what it means is package task/agent's business.
type StepLog interface {
	// AppendSteps adds entries to idx's log, in order; they are durable
	// (fsynced, committed) before it returns, so that nothing that
	// depends on them happens first. An entry that is not compact JSON is
	// refused with nothing written. A job open read-only returns
	// ErrReadOnly.
	AppendSteps(ctx context.Context, idx int, entries ...[]byte) error
	// Steps returns idx's entries, oldest first; none is not an error.
	Steps(ctx context.Context, idx int) ([][]byte, error)
	// StepsLocation names where the log lives, for the record's
	// transcript: "steps.jsonl" (in the job's directory), "tenax_notes",
	// "memory".
	StepsLocation() string
}

// StepsOf returns the job's StepLog, looking through the wrappers a
// caller puts around a job (a wrapper offers Unwrap() Job, as errors
// do).
func StepsOf(j Job) (StepLog, bool) {
	for {
		if s, ok := j.(StepLog); ok {
			return s, true
		}
		u, ok := j.(interface{ Unwrap() Job })
		if !ok {
			return nil, false
		}
		j = u.Unwrap()
	}
}

// CheckStep returns an error when entry is not one compact JSON value: a
// step log keeps entries a line each.
func CheckStep(entry []byte) error {
	if !json.Valid(entry) {
		return fmt.Errorf("store: a step entry is not JSON: %.80q", entry)
	}
	if bytes.ContainsAny(entry, "\r\n") {
		return fmt.Errorf("store: a step entry holds a line break: %.80q", entry)
	}
	return nil
}
