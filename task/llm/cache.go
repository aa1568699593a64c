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
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
