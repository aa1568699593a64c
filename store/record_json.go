package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/tenaxhq/tenax/classify"
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
		b = appendString(b, r.ID)
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
		b = appendString(b, r.Error)
	}
	if r.Class != 0 {
		// String, unlike MarshalText, names a class without allocating.
		name := r.Class.String()
		if c, err := classify.ParseClass(name); err != nil || c != r.Class {
			return b, fmt.Errorf("class %d has no name", uint8(r.Class))
		}
		b = append(b, `,"class":`...)
		b = appendString(b, name)
	}
	b = append(b, `,"retryable":`...)
	b = strconv.AppendBool(b, r.Retryable)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(r.Attempts), 10)
	b = append(b, `,"heal_attempts":`...)
	b = strconv.AppendInt(b, int64(r.HealAttempts), 10)
	b = append(b, `,"generation_attempts":`...)
	b = strconv.AppendInt(b, int64(r.GenerationAttempts), 10)
	b = append(b, `,"cache_hit":`...)
	b = strconv.AppendBool(b, r.CacheHit)
	if r.Fingerprint != "" {
		b = append(b, `,"fingerprint":`...)
		b = appendString(b, r.Fingerprint)
	}
	if len(r.TrackedErrors) > 0 {
		b = append(b, `,"tracked_errors":`...)
		if b, err = appendRaw(b, "tracked_errors", r.TrackedErrors); err != nil {
			return b, err
		}
	}
	b = append(b, `,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, r.Usage.InputTokens, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, r.Usage.OutputTokens, 10)
	b = append(b, '}')
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

var errInvalidRaw = errors.New("is not valid JSON")

// appendRaw appends raw compacted, or null when it is empty, as
// encoding/json does for a json.RawMessage.
func appendRaw(b []byte, field string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return append(b, "null"...), nil
	}
	if !json.Valid(raw) {
		return b, fmt.Errorf("%s %w", field, errInvalidRaw)
	}
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		b = append(b, c)
	}
	return b, nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD
// and U+2028/U+2029 are escaped, as encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
