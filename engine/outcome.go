package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// An item's one record is built here, from its State, whichever driver
// ran its calls (the local dispatcher, River's workers, batch waves): a
// field a record carries is carried by every mode's, because there is one
// builder (docs/architecture.md, "One item, one path").

// Spent is what an item's calls cost and said about themselves: the
// tokens, the cost when a price is known, and why the provider stopped the
// last answer.
type Spent struct {
	Usage task.Usage
	// CostUSD sums the calls' costs; CostKnown says a price was known for
	// at least one of them (a record without it has no cost_usd).
	CostUSD   float64
	CostKnown bool
	// FinishReason is the last non-empty finish reason of a call.
	FinishReason string
	// Agent is the last agent attempt's stats, nil for other tasks.
	Agent *task.AgentStats
}

// Account adds one call's result to what the item spent.
func (s *Spent) Account(res task.Result) {
	if res.FinishReason != "" {
		s.FinishReason = res.FinishReason
	}
	s.Usage = s.Usage.Add(res.Usage)
	if res.Agent != nil {
		s.Agent = res.Agent
	}
	if res.CostUSD > 0 {
		s.CostUSD += res.CostUSD
		s.CostKnown = true
	}
}

// Served names where an item's record was produced: the route and model
// of the call that ended it, and the routes it left before, with their
// errors and call times. The zero value is a job without routes.
type Served struct {
	Route, Model string
	Tries        []store.Try
	// CallMS is the time the item's calls on Route took: the record's
	// call_ms, none on a job without routes.
	CallMS int64
}

// Success is the record of item, succeeded with output.
func (s *State) Success(item task.Item, at Served, output json.RawMessage) store.Record {
	rec := s.record(item, at)
	rec.Output = output
	return rec
}

// Failure is the record of item, failed with err of class d; cause names
// what is wrong, for the fingerprint (Next.Err, Next.Cause and
// Next.Decision of a StepFail).
func (s *State) Failure(item task.Item, at Served, err, cause error, d classify.Decision) store.Record {
	rec := s.record(item, at)
	rec.Output = s.LastOutput
	if rec.Output == nil {
		rec.Output = json.RawMessage("null")
	}
	rec.Error = err.Error()
	rec.Stderr = stderrTail(err)
	rec.Class = d.Class
	rec.Retryable = d.Class == classify.Retryable
	rec.Fingerprint = heal.FailureFingerprint(d.Class, cause)
	return rec
}

// record is what every record of the item says, however it ended.
func (s *State) record(item task.Item, at Served) store.Record {
	now := time.Now()
	rec := store.Record{
		Idx:                item.Idx,
		ID:                 item.ID,
		Input:              item.Raw,
		Attempts:           s.Calls,
		HealAttempts:       s.Heals,
		GenerationAttempts: s.Generations,
		RateLimited:        s.RateLimited,
		CacheHit:           s.CacheHit,
		FinishReason:       s.FinishReason,
		Usage:              s.Usage,
		Agent:              s.Agent,
		TrackedErrors:      heal.TrackedJSON(s.Tracker),
		FinishedAt:         now.UTC(),
		Route:              at.Route,
		Model:              at.Model,
		Tries:              at.Tries,
		CallMS:             at.CallMS,
	}
	if !s.Started.IsZero() {
		rec.DurationMS = now.Sub(s.Started).Milliseconds()
	}
	if s.CostKnown {
		c := s.CostUSD
		rec.CostUSD = &c
	}
	return rec
}

// stderrTail is the end of a failed command's stderr carried by err (an
// exec task's exit, a command validator's failure), at most
// store.MaxStderrTail bytes cut at a line or rune boundary; "" for errors
// of HTTP calls, whose bodies are not stderr.
func stderrTail(err error) string {
	d := classify.Describe(err)
	if d.Stderr == "" || d.Status != 0 {
		return ""
	}
	s := strings.TrimRight(d.Stderr, " \t\r\n")
	if len(s) <= store.MaxStderrTail {
		return s
	}
	s = s[len(s)-store.MaxStderrTail:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)/2 {
		return s[i+1:]
	}
	return strings.ToValidUTF8(s, "")
}

// isRateLimit reports whether err is a provider's rate limit (429).
func isRateLimit(err error) bool {
	sc, ok := errors.AsType[statusError](err)
	return ok && sc.HTTPStatus() == 429
}

// statusError is an error with an HTTP status (classify.StatusCoder), as
// errors.AsType needs it: a type argument that is an error.
type statusError interface {
	error
	classify.StatusCoder
}

// Record is the record of an item that failed before any call (a bad
// input line): class item, no attempt.
func (b *BadItem) Record() store.Record {
	msg := b.Err.Error()
	return store.Record{
		Idx:         b.Item.Idx,
		ID:          b.Item.ID,
		Input:       b.Item.Raw,
		Output:      json.RawMessage("null"),
		Error:       msg,
		Class:       classify.Item,
		Fingerprint: heal.Fingerprint(classify.Item.String(), msg),
		FinishedAt:  time.Now().UTC(),
	}
}
