package validate

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
)

// snippetRunes is how much of a non-matching output a regex error quotes.
const snippetRunes = 80

// RegexValidator requires an output's text to match a regular expression.
// It is immutable and safe for concurrent use.
type RegexValidator struct {
	re *regexp.Regexp
}

// Regex compiles pattern (Go RE2 syntax). The match is unanchored, as in
// grep: anchor it with ^ and $ (and (?s) to let . cross lines) to require
// the whole output to match.
func Regex(pattern string) (*RegexValidator, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("validate: regex %q: %w", pattern, err)
	}
	return &RegexValidator{re: re}, nil
}

// Validate reports whether the output's text matches: the decoded string
// of a JSON string output, the compact JSON of any other value.
func (r *RegexValidator) Validate(_ context.Context, output json.RawMessage) error {
	text, _ := outputText(output)
	if r.re.Match(text) {
		return nil
	}
	return &Error{
		Validator: KindRegex,
		Message:   fmt.Sprintf("output does not match pattern %s: %q", r.re, snippet(text)),
	}
}

// snippet returns the start of text, at most snippetRunes runes, marked
// with "…" when cut.
func snippet(text []byte) string {
	n := 0
	for i := range string(text) {
		if n == snippetRunes {
			return string(text[:i]) + "…"
		}
		n++
	}
	return string(text)
}
