package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// Cache stores outputs by key. A Task gets before each call and puts after
// each good output; the engine removes an entry whose output proves
// invalid. Implementations must be safe for concurrent use.
type Cache interface {
	// Get returns the value stored under key; ok is false on a miss.
	Get(key string) (value []byte, ok bool, err error)
	// Put stores value under key.
	Put(key string, value []byte) error
}

// Call is what makes two calls the same for the cache: everything that
// shapes the answer, and nothing secret.
type Call struct {
	Provider    string    `json:"provider"`
	BaseURL     string    `json:"base_url"`
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	MaxTokens   int       `json:"max_tokens"`
	Temperature *float64  `json:"temperature"`
	Output      string    `json:"output"`
	// Extra holds the other settings that shape the answer (top_p, stop,
	// seed, reasoning, extra_body, the structured output schema); nil when
	// none is set, which keeps the keys of calls without them unchanged.
	Extra map[string]any `json:"extra,omitempty"`
}

// CacheKey returns the hex SHA-256 of c's canonical JSON (its fields in a
// fixed order, the temperature as its shortest decimal). The API key is
// not part of it, so it never reaches the cache.
func CacheKey(c Call) string {
	var buf [512]byte
	b, ok := appendCanonicalCall(buf[:0], c)
	if !ok {
		b = canonicalCallJSON(c)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// canonicalCallJSON is c's canonical JSON as encoding/json writes it: the
// definition of a cache key, which appendCanonicalCall writes faster.
func canonicalCallJSON(c Call) []byte {
	canonical := struct {
		Provider    string    `json:"provider"`
		BaseURL     string    `json:"base_url"`
		Model       string    `json:"model"`
		Messages    []Message `json:"messages"`
		MaxTokens   int       `json:"max_tokens"`
		Temperature *string   `json:"temperature"`
		Output      string    `json:"output"`
		Extra       any       `json:"extra,omitempty"`
	}{c.Provider, c.BaseURL, c.Model, c.Messages, c.MaxTokens, nil, c.Output, nil}
	if len(c.Extra) > 0 {
		canonical.Extra = c.Extra // encoding/json sorts map keys
	}
	if c.Temperature != nil {
		t := strconv.FormatFloat(*c.Temperature, 'g', -1, 64)
		canonical.Temperature = &t
	}
	b, err := json.Marshal(canonical)
	if err != nil {
		// Only Extra can fail (an extra_body value JSON cannot hold); key
		// what can be keyed.
		canonical.Extra = fmt.Sprint(c.Extra)
		b, _ = json.Marshal(canonical)
	}
	return b
}

// appendCanonicalCall appends to b the bytes canonicalCallJSON returns for
// c, without encoding/json's reflection (some 7 µs of a call's CPU, 4% of
// a job's at 20 ms with the cache on): the key of every call. ok is false
// for a call with Extra, which canonicalCallJSON encodes.
func appendCanonicalCall(b []byte, c Call) (_ []byte, ok bool) {
	if len(c.Extra) > 0 {
		return b, false
	}
	b = append(b, `{"provider":`...)
	b = appendJSONString(b, c.Provider)
	b = append(b, `,"base_url":`...)
	b = appendJSONString(b, c.BaseURL)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, c.Model)
	b = append(b, `,"messages":`...)
	if c.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, m := range c.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"role":`...)
			b = appendJSONString(b, m.Role)
			b = append(b, `,"content":`...)
			b = appendJSONString(b, m.Content)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"max_tokens":`...)
	b = strconv.AppendInt(b, int64(c.MaxTokens), 10)
	b = append(b, `,"temperature":`...)
	if c.Temperature == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, strconv.FormatFloat(*c.Temperature, 'g', -1, 64))
	}
	b = append(b, `,"output":`...)
	b = appendJSONString(b, c.Output)
	return append(b, '}'), true
}

// appendJSONString appends s as encoding/json writes a string: as it is
// between quotes when every byte is printable ASCII that encoding/json
// does not escape, else as json.Marshal escapes it (HTML characters,
// control bytes, U+2028 and U+2029, invalid UTF-8).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
