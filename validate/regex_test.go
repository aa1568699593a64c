package validate

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestRegexMatchesTheOutputText(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		output  json.RawMessage
		want    string // "" for a match, else the expected message
	}{
		{name: "decoded text matches", pattern: `^Hola, .+!$`, output: textOutput("Hola, mundo!")},
		{name: "escapes are decoded before matching", pattern: "^a\nb$", output: textOutput("a\nb")},
		{name: "JSON value is matched compact", pattern: `^\{"es":"hola"\}$`, output: json.RawMessage(`{ "es" : "hola" }`)},
		{name: "unanchored match anywhere", pattern: `\d{4}`, output: textOutput("year 2024 it was")},
		{
			name:    "text that does not match",
			pattern: `^\d+$`,
			output:  textOutput("forty-two"),
			want:    `output does not match pattern ^\d+$: "forty-two"`,
		},
		{
			name:    "long text is quoted as a snippet",
			pattern: `^x`,
			output:  textOutput(strings.Repeat("é", 100)),
			want:    `output does not match pattern ^x: "` + strings.Repeat("é", snippetRunes) + `…"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Regex(tt.pattern)
			if err != nil {
				t.Fatalf("Regex(%q): %v", tt.pattern, err)
			}
			err = r.Validate(context.Background(), tt.output)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate(%s) = %v, want a match", tt.output, err)
				}
				return
			}
			verr := asValidationError(t, err)
			if verr.Validator != KindRegex || verr.Message != tt.want {
				t.Errorf("got %s error %q, want regex error %q", verr.Validator, verr.Message, tt.want)
			}
		})
	}
}

func TestRegexRefusesBadPattern(t *testing.T) {
	_, err := Regex(`(unclosed`)
	if err == nil || !strings.Contains(err.Error(), "(unclosed") {
		t.Fatalf("Regex((unclosed) = %v, want an error naming the pattern", err)
	}
}
