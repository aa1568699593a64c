package jsonl

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
)

// The fast decode of a record. A line fastLine accepts has been read to
// its end and found well formed, every field of the kind Record gives it;
// encoding/json would walk it twice more, byte by byte (checking it, then
// skipping through it), which was most of the time status and export of a
// large job took. fastDecode walks the line once, as fastLine does, noting
// where each of Record's fields has its value, and fills the record from
// those spans: raw JSON fields copied, strings without escapes converted
// as they are, numbers, booleans, usage and tries read from their few
// bytes. Whatever it is not sure of gives up (a field that appears twice,
// which encoding/json merges or replaces, an int that does not fit, a
// number a float64 cannot hold), and decodeRecord then applies the rule
// with encoding/json, which says what is wrong or reads it right. A
// string with an escape or a byte that is not UTF-8 is unquoted by
// encoding/json alone, so that its unquoting is the rule's own.
// FuzzFastDecode holds fastDecode to decodeByRule, the rule itself.

// Record's fields, as lineSpans numbers them.
const (
	rfID = iota
	rfInput
	rfOutput
	rfError
	rfClass
	rfRetryable
	rfAttempts
	rfHealAttempts
	rfGenerationAttempts
	rfRateLimited
	rfCacheHit
	rfFinishReason
	rfStderr
	rfRoute
	rfModel
	rfTries
	rfCallMS
	rfFingerprint
	rfTrackedErrors
	rfAgent
	rfUsage
	rfCostUSD
	rfDurationMS
	rfFinishedAt
	rfCount
)

// recordField is the number of Record's field whose key is key, -1 for a
// key Record has not (which encoding/json ignores: fastLine declines the
// keys that may differ from one of Record's only in case).
func recordField(key []byte) int {
	switch string(key) {
	case "id":
		return rfID
	case "input":
		return rfInput
	case "output":
		return rfOutput
	case "error":
		return rfError
	case "class":
		return rfClass
	case "retryable":
		return rfRetryable
	case "attempts":
		return rfAttempts
	case "heal_attempts":
		return rfHealAttempts
	case "generation_attempts":
		return rfGenerationAttempts
	case "rate_limited":
		return rfRateLimited
	case "cache_hit":
		return rfCacheHit
	case "finish_reason":
		return rfFinishReason
	case "stderr":
		return rfStderr
	case "route":
		return rfRoute
	case "model":
		return rfModel
	case "tries":
		return rfTries
	case "call_ms":
		return rfCallMS
	case "fingerprint":
		return rfFingerprint
	case "tracked_errors":
		return rfTrackedErrors
	case "agent":
		return rfAgent
	case "usage":
		return rfUsage
	case "cost_usd":
		return rfCostUSD
	case "duration_ms":
		return rfDurationMS
	case "finished_at":
		return rfFinishedAt
	}
	return -1
}

// lineSpans is where the value of each of Record's fields lies in a line:
// line[start:end], end 0 for a field the line has not.
type lineSpans struct {
	at [rfCount]struct{ start, end int }
}

// note notes the value of key at line[start:end]; it is false for a
// field seen before, which fastDecode leaves to encoding/json.
func (s *lineSpans) note(key []byte, start, end int) bool {
	f := recordField(key)
	if f < 0 {
		return true
	}
	if s.at[f].end != 0 {
		return false
	}
	s.at[f].start, s.at[f].end = start, end
	return true
}

// value is the bytes of field f's value, nil when the line has none.
func (s *lineSpans) value(line []byte, f int) []byte {
	if s.at[f].end == 0 {
		return nil
	}
	return line[s.at[f].start:s.at[f].end]
}

// fastDecode decodes a complete line without its newline into rec as
// decodeByRule would; it is false, rec undefined, when it is not sure.
func fastDecode(line []byte, rec *store.Record) bool {
	if hasControl(line) {
		return false
	}
	var spans lineSpans
	idx, _, ok := fastScan(line, &spans)
	if !ok {
		return false
	}
	*rec = store.Record{Idx: idx}
	spans.fillRaw(line, rec)
	return spans.fillStrings(line, rec) && spans.fillScalars(line, rec) && spans.fillNested(line, rec)
}

// fillRaw copies the raw JSON fields, into one allocation: each is the
// value's bytes as they are, "null" included, as json.RawMessage takes
// them.
func (s *lineSpans) fillRaw(line []byte, rec *store.Record) {
	in, out, tracked := s.value(line, rfInput), s.value(line, rfOutput), s.value(line, rfTrackedErrors)
	buf := make([]byte, 0, len(in)+len(out)+len(tracked))
	take := func(v []byte) json.RawMessage {
		if v == nil {
			return nil
		}
		start := len(buf)
		buf = append(buf, v...)
		return buf[start:len(buf):len(buf)]
	}
	rec.Input, rec.Output, rec.TrackedErrors = take(in), take(out), take(tracked)
}

// fillStrings sets the string fields and the class.
func (s *lineSpans) fillStrings(line []byte, rec *store.Record) bool {
	for _, f := range [...]struct {
		field int
		to    *string
	}{
		{rfID, &rec.ID}, {rfError, &rec.Error}, {rfFinishReason, &rec.FinishReason},
		{rfStderr, &rec.Stderr}, {rfRoute, &rec.Route}, {rfModel, &rec.Model},
		{rfFingerprint, &rec.Fingerprint},
	} {
		if !decodeString(s.value(line, f.field), f.to) {
			return false
		}
	}
	return decodeClass(s.value(line, rfClass), &rec.Class)
}

// fillScalars sets the booleans, the integers, the cost and the time.
func (s *lineSpans) fillScalars(line []byte, rec *store.Record) bool {
	for _, f := range [...]struct {
		field int
		to    *bool
	}{{rfRetryable, &rec.Retryable}, {rfCacheHit, &rec.CacheHit}} {
		if !decodeBool(s.value(line, f.field), f.to) {
			return false
		}
	}
	for _, f := range [...]struct {
		field int
		to    *int
	}{
		{rfAttempts, &rec.Attempts}, {rfHealAttempts, &rec.HealAttempts},
		{rfGenerationAttempts, &rec.GenerationAttempts}, {rfRateLimited, &rec.RateLimited},
	} {
		if !decodeInt(s.value(line, f.field), f.to) {
			return false
		}
	}
	for _, f := range [...]struct {
		field int
		to    *int64
	}{{rfCallMS, &rec.CallMS}, {rfDurationMS, &rec.DurationMS}} {
		if !decodeInt64(s.value(line, f.field), f.to) {
			return false
		}
	}
	if v := s.value(line, rfCostUSD); v != nil && !isNull(v) {
		cost, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return false // out of a float64's range: the rule's to refuse
		}
		rec.CostUSD = &cost
	}
	if v := s.value(line, rfFinishedAt); v != nil {
		// time.Time's own decoding: its result (its location above all)
		// is the rule's by construction, and costs little.
		if err := rec.FinishedAt.UnmarshalJSON(v); err != nil {
			return false
		}
	}
	return true
}

// fillNested sets usage and tries; agent, which fastLine accepts only as
// null, stays nil.
func (s *lineSpans) fillNested(line []byte, rec *store.Record) bool {
	if v := s.value(line, rfAgent); v != nil && !isNull(v) {
		return false
	}
	if v := s.value(line, rfUsage); v != nil && !isNull(v) && !decodeUsage(v, rec) {
		return false
	}
	if v := s.value(line, rfTries); v != nil && !isNull(v) {
		tries, ok := decodeTries(v)
		if !ok {
			return false
		}
		rec.Tries = tries
	}
	return true
}

// decodeUsage reads a record's usage object, v, into rec.Usage.
func decodeUsage(v []byte, rec *store.Record) bool {
	u := &rec.Usage
	var seen uint8
	return eachField(v, func(key, val []byte) bool {
		var bit uint8
		var ok bool
		switch string(key) {
		case "input_tokens":
			bit, ok = 1<<0, decodeInt64(val, &u.InputTokens)
		case "output_tokens":
			bit, ok = 1<<1, decodeInt64(val, &u.OutputTokens)
		case "cached_input_tokens":
			bit, ok = 1<<2, decodeInt64(val, &u.CachedInputTokens)
		case "cache_write_tokens":
			bit, ok = 1<<3, decodeInt64(val, &u.CacheWriteTokens)
		case "reasoning_tokens":
			bit, ok = 1<<4, decodeInt64(val, &u.ReasoningTokens)
		case "impossible":
			bit, ok = 1<<5, decodeString(val, &u.Impossible)
		default:
			return true // a key task.Usage has not: ignored
		}
		if seen&bit != 0 {
			return false // a key twice: encoding/json's to read
		}
		seen |= bit
		return ok
	})
}

// decodeTries reads a record's tries, v, an array of objects: an empty
// array is an empty slice, not nil, as encoding/json makes it.
func decodeTries(v []byte) ([]store.Try, bool) {
	if len(v) < 2 || v[0] != '[' {
		return nil, false
	}
	tries := []store.Try{}
	if string(v) == "[]" {
		return tries, true
	}
	slash := bytes.IndexByte(v, '\\')
	if slash < 0 {
		slash = len(v)
	}
	for i := 1; ; {
		end, ok := anyValue(v, i, 0, &slash)
		if !ok || end >= len(v) {
			return nil, false
		}
		var t store.Try
		if !decodeTry(v[i:end], &t) {
			return nil, false
		}
		tries = append(tries, t)
		switch v[end] {
		case ']':
			return tries, end+1 == len(v)
		case ',':
			i = end + 1
		default:
			return nil, false
		}
	}
}

// decodeTry reads one try, the object v, into t.
func decodeTry(v []byte, t *store.Try) bool {
	var seen uint8
	return eachField(v, func(key, val []byte) bool {
		var bit uint8
		var ok bool
		switch string(key) {
		case "route":
			bit, ok = 1<<0, decodeString(val, &t.Route)
		case "model":
			bit, ok = 1<<1, decodeString(val, &t.Model)
		case "error":
			bit, ok = 1<<2, decodeString(val, &t.Error)
		case "class":
			bit, ok = 1<<3, decodeClass(val, &t.Class)
		case "fallback":
			bit, ok = 1<<4, decodeString(val, &t.Fallback)
		case "call_ms":
			bit, ok = 1<<5, decodeInt64(val, &t.CallMS)
		default:
			return true // a key store.Try has not: ignored
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return ok
	})
}

// eachField calls fn with each key of the object obj, whole (fastLine
// checked it: no escape in a key, every value well formed), and the bytes
// of its value; false when obj is not such an object or fn says so.
func eachField(obj []byte, fn func(key, val []byte) bool) bool {
	if len(obj) < 2 || obj[0] != '{' {
		return false
	}
	if obj[1] == '}' {
		return len(obj) == 2
	}
	slash := bytes.IndexByte(obj, '\\')
	if slash < 0 {
		slash = len(obj)
	}
	for i := 1; ; {
		key, next, ok := fastKey(obj, i, slash)
		if !ok {
			return false
		}
		end, ok := anyValue(obj, next, 0, &slash)
		if !ok || end >= len(obj) || !fn(key, obj[next:end]) {
			return false
		}
		switch obj[end] {
		case '}':
			return end+1 == len(obj)
		case ',':
			i = end + 1
		default:
			return false
		}
	}
}

func isNull(v []byte) bool { return string(v) == "null" }

// decodeString sets *to from the JSON string v; null or nil leaves it. A
// string with an escape or a byte that is not UTF-8 (which encoding/json
// replaces with U+FFFD) is unquoted by encoding/json itself.
func decodeString(v []byte, to *string) bool {
	if v == nil || isNull(v) {
		return true
	}
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	if body := v[1 : len(v)-1]; bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		*to = string(body)
		return true
	}
	return json.Unmarshal(v, to) == nil
}

// decodeClass sets *to from the class name v (classify.Class's
// UnmarshalText); null or nil leaves it. fastLine took only names
// without an escape that ParseClass knows.
func decodeClass(v []byte, to *classify.Class) bool {
	if v == nil || isNull(v) {
		return true
	}
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	// A switch on the name, not ParseClass(string(name)): no allocation.
	switch string(v[1 : len(v)-1]) {
	case "", "unknown":
		*to = classify.Unknown
	case "retryable":
		*to = classify.Retryable
	case "fatal":
		*to = classify.Fatal
	case "item":
		*to = classify.Item
	case "invalid":
		*to = classify.Invalid
	case "canceled":
		*to = classify.Canceled
	default:
		return false
	}
	return true
}

// decodeBool sets *to from true or false; null or nil leaves it.
func decodeBool(v []byte, to *bool) bool {
	switch string(v) {
	case "", "null":
	case "true":
		*to = true
	case "false":
		*to = false
	default:
		return false
	}
	return true
}

// decodeInt64 sets *to from the integer v; null or nil leaves it.
func decodeInt64(v []byte, to *int64) bool {
	if v == nil || isNull(v) {
		return true
	}
	n, ok := parseInt(v)
	if ok {
		*to = n
	}
	return ok
}

// decodeInt is decodeInt64 for an int, which must hold the number (an int
// of 32 bits holds fewer than fastLine takes).
func decodeInt(v []byte, to *int) bool {
	var n int64
	if !decodeInt64(v, &n) || int64(int(n)) != n {
		return false
	}
	if v != nil && !isNull(v) {
		*to = int(n)
	}
	return true
}

// parseInt reads an optional '-' and at most 18 digits, which an int64
// holds; anything else is not sure.
func parseInt(v []byte) (int64, bool) {
	neg := len(v) > 0 && v[0] == '-'
	digits := v
	if neg {
		digits = v[1:]
	}
	if len(digits) == 0 || len(digits) > maxInt64Digits || digits[0] == '0' && len(digits) > 1 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
