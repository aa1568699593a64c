package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
)

// AppendJSON appends r as one line-free JSON object to dst and returns the
// extended slice. It is the checkpoint writer's hot path: it writes the
// same object encoding/json would (decoding it with json.Unmarshal gives
// r back) without allocating, and it refuses what would corrupt a log — raw
// JSON fields that are not valid JSON, a NaN or infinite cost, a time
// outside years 0–9999, an unnamed class — returning dst unchanged.
//
// Raw JSON fields are compacted, so a pretty-printed input never splits a
// record over several lines. Strings are escaped as JSON requires, but '<',
// '>' and '&' are left as they are.
func (r *Record) AppendJSON(dst []byte) ([]byte, error) {
	start := len(dst)
	b, err := r.appendJSON(dst)
	if err != nil {
		return dst[:start], fmt.Errorf("store: encoding record of idx %d: %w", r.Idx, err)
	}
	return b, nil
}

// MarshalJSON encodes r as AppendJSON does.
func (r Record) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil) }

func (r *Record) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"_idx":`...)
	b = strconv.AppendInt(b, int64(r.Idx), 10)
	if r.ID != "" {
		b = append(b, `,"id":`...)
		b = task.AppendJSONString(b, r.ID)
	}
	b = append(b, `,"input":`...)
	if b, err = appendRaw(b, "input", r.Input); err != nil {
		return b, err
	}
	b = append(b, `,"output":`...)
	if b, err = appendRaw(b, "output", r.Output); err != nil {
		return b, err
	}
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = task.AppendJSONString(b, r.Error)
	}
	if r.Class != 0 {
		// String, unlike MarshalText, names a class without allocating.
		name := r.Class.String()
		if c, err := classify.ParseClass(name); err != nil || c != r.Class {
			return b, fmt.Errorf("class %d has no name", uint8(r.Class))
		}
		b = append(b, `,"class":`...)
		b = task.AppendJSONString(b, name)
	}
	b = r.appendCounts(b)
	for _, f := range [...]struct{ name, v string }{{`,"finish_reason":`, r.FinishReason}, {`,"stderr":`, r.Stderr}} {
		if f.v != "" {
			b = append(b, f.name...)
			b = task.AppendJSONString(b, f.v)
		}
	}
	if b, err = r.appendRoute(b); err != nil {
		return b, err
	}
	if r.Fingerprint != "" {
		b = append(b, `,"fingerprint":`...)
		b = task.AppendJSONString(b, r.Fingerprint)
	}
	if len(r.TrackedErrors) > 0 {
		b = append(b, `,"tracked_errors":`...)
		if b, err = appendRaw(b, "tracked_errors", r.TrackedErrors); err != nil {
			return b, err
		}
	}
	if r.Agent != nil {
		// Rare and small: encoding/json's allocations do not matter here.
		agent, err := json.Marshal(r.Agent)
		if err != nil {
			return b, fmt.Errorf("agent: %w", err)
		}
		b = append(b, `,"agent":`...)
		b = append(b, agent...)
	}
	b = appendUsage(b, r.Usage)
	if r.CostUSD != nil {
		f := *r.CostUSD
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return b, fmt.Errorf("cost_usd is %v, not a JSON number", f)
		}
		b = append(b, `,"cost_usd":`...)
		b = strconv.AppendFloat(b, f, 'g', -1, 64)
	}
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendInt(b, r.DurationMS, 10)
	b = append(b, `,"finished_at":`...)
	if y := r.FinishedAt.Year(); y < 0 || y > 9999 {
		return b, fmt.Errorf("finished_at year %d is outside [0,9999]", y)
	}
	b = append(b, '"')
	b = r.FinishedAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `"}`...)
	return b, nil
}

// appendCounts appends whether the record is retryable and what its item
// spent: attempts, re-asks, generations, 429s (when any) and the cache.
func (r *Record) appendCounts(b []byte) []byte {
	b = append(b, `,"retryable":`...)
	b = strconv.AppendBool(b, r.Retryable)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(r.Attempts), 10)
	b = append(b, `,"heal_attempts":`...)
	b = strconv.AppendInt(b, int64(r.HealAttempts), 10)
	b = append(b, `,"generation_attempts":`...)
	b = strconv.AppendInt(b, int64(r.GenerationAttempts), 10)
	if r.RateLimited > 0 {
		b = append(b, `,"rate_limited":`...)
		b = strconv.AppendInt(b, int64(r.RateLimited), 10)
	}
	b = append(b, `,"cache_hit":`...)
	return strconv.AppendBool(b, r.CacheHit)
}

// appendRoute appends the record's route, model, tries and call time,
// when set.
func (r *Record) appendRoute(b []byte) ([]byte, error) {
	if r.Route != "" {
		b = append(b, `,"route":`...)
		b = task.AppendJSONString(b, r.Route)
	}
	if r.Model != "" {
		b = append(b, `,"model":`...)
		b = task.AppendJSONString(b, r.Model)
	}
	if len(r.Tries) > 0 {
		var err error
		if b, err = appendTries(b, r.Tries); err != nil {
			return b, err
		}
	}
	if r.CallMS != 0 {
		b = append(b, `,"call_ms":`...)
		b = strconv.AppendInt(b, r.CallMS, 10)
	}
	return b, nil
}

// appendTries appends a record's tries.
func appendTries(b []byte, tries []Try) ([]byte, error) {
	b = append(b, `,"tries":[`...)
	for i, t := range tries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"route":`...)
		b = task.AppendJSONString(b, t.Route)
		if t.Model != "" {
			b = append(b, `,"model":`...)
			b = task.AppendJSONString(b, t.Model)
		}
		b = append(b, `,"error":`...)
		b = task.AppendJSONString(b, t.Error)
		if t.Class != 0 {
			name := t.Class.String()
			if c, err := classify.ParseClass(name); err != nil || c != t.Class {
				return b, fmt.Errorf("tries[%d]: class %d has no name", i, uint8(t.Class))
			}
			b = append(b, `,"class":`...)
			b = task.AppendJSONString(b, name)
		}
		if t.Fallback != "" {
			b = append(b, `,"fallback":`...)
			b = task.AppendJSONString(b, t.Fallback)
		}
		if t.CallMS != 0 {
			b = append(b, `,"call_ms":`...)
			b = strconv.AppendInt(b, t.CallMS, 10)
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// appendUsage appends the record's "usage" object: input and output
// tokens always, the others when not zero or empty.
func appendUsage(b []byte, u task.Usage) []byte {
	b = append(b, `,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, u.InputTokens, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, u.OutputTokens, 10)
	for _, f := range [...]struct {
		name string
		n    int64
	}{
		{`,"cached_input_tokens":`, u.CachedInputTokens},
		{`,"cache_write_tokens":`, u.CacheWriteTokens},
		{`,"reasoning_tokens":`, u.ReasoningTokens},
	} {
		if f.n != 0 {
			b = append(b, f.name...)
			b = strconv.AppendInt(b, f.n, 10)
		}
	}
	if u.Impossible != "" {
		b = append(b, `,"impossible":`...)
		b = task.AppendJSONString(b, u.Impossible)
	}
	b = append(b, '}')
	return b
}

var errInvalidRaw = errors.New("is not valid JSON")
