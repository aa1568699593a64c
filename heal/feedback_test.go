package heal

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// opaqueError hides its cause from its message, as many library error
// types do; its cause is then news to the reader.
type opaqueError struct {
	msg   string
	cause error
}

func (e *opaqueError) Error() string { return e.msg }
func (e *opaqueError) Unwrap() error { return e.cause }

type stderrError struct{ stderr string }

func (e *stderrError) Error() string  { return "exit status 1" }
func (e *stderrError) Stderr() string { return e.stderr }

func TestFormatFeedbackFullMessage(t *testing.T) {
	err := fmt.Errorf("validate: %w", &opaqueError{msg: "schema check failed", cause: errors.New("missing property 'es'")})
	got := FormatFeedback(FeedbackInput{
		PreviousOutput: `{"fr": "chat"}`,
		Err:            err,
		Stderr:         "line 1\n\nline 3\nline 4\nline 5\nline 6\nline 7\n",
		Hints: []Hint{
			{Match: regexp.MustCompile(`missing property`), Text: "Include every required property."},
			{Match: regexp.MustCompile(`line 7`), Text: "Read the whole log."},
			{Match: regexp.MustCompile(`never matches`), Text: "Not shown."},
			{Match: regexp.MustCompile(`schema`), Text: "Include every required property."},
			{Text: "Answer with JSON only."},
		},
	})
	want := "Your previous output:\n" +
		"```\n{\"fr\": \"chat\"}\n```\n\n" +
		"The output failed validation: validate: schema check failed\n\n" +
		"Caused by:\n- missing property 'es'\n\n" +
		"First lines of stderr:\n```\nline 1\n\nline 3\nline 4\nline 5\n[2 more lines]\n```\n\n" +
		"Hints:\n- Include every required property.\n- Read the whole log.\n- Answer with JSON only.\n\n" +
		"Correct the problem and answer again with the complete output, not only the changed part.\n"
	if got != want {
		t.Fatalf("FormatFeedback:\n--- got ---\n%s\n--- want ---\n%s", got, want)
	}
}

func TestFormatFeedbackSections(t *testing.T) {
	tests := []struct {
		name     string
		in       FeedbackInput
		contains []string
		lacks    []string
	}{
		{
			name:     "wrapped errors add no causes",
			in:       FeedbackInput{PreviousOutput: "x", Err: fmt.Errorf("a: %w", fmt.Errorf("b: %w", errors.New("c")))},
			contains: []string{"The output failed validation: a: b: c\n"},
			lacks:    []string{"Caused by"},
		},
		{
			name:     "joined errors list what the top hides",
			in:       FeedbackInput{PreviousOutput: "x", Err: &opaqueError{msg: "2 problems", cause: errors.Join(errors.New("first"), errors.New("second"))}},
			contains: []string{"Caused by:\n- first\nsecond\n"},
		},
		{
			name:     "each cause once",
			in:       FeedbackInput{PreviousOutput: "x", Err: &opaqueError{msg: "top", cause: &opaqueError{msg: "middle: deep", cause: errors.New("deep")}}},
			contains: []string{"Caused by:\n- middle: deep\n\n"},
		},
		{
			name:     "empty output and no error",
			in:       FeedbackInput{},
			contains: []string{"Your previous output was empty.\n\nThe output failed validation.\n"},
			lacks:    []string{"```", "Hints"},
		},
		{
			name:     "stderr from the error chain",
			in:       FeedbackInput{PreviousOutput: "x", Err: fmt.Errorf("validator: %w", &stderrError{stderr: "Traceback (most recent call last):\nValueError: bad"})},
			contains: []string{"First lines of stderr:\n```\nTraceback (most recent call last):\nValueError: bad\n```\n"},
		},
		{
			name:  "stderr that is the message is said once",
			in:    FeedbackInput{PreviousOutput: "x", Err: errors.New("boom"), Stderr: "boom\n"},
			lacks: []string{"stderr"},
		},
		{
			name:     "hint matched by stderr only",
			in:       FeedbackInput{PreviousOutput: "x", Err: errors.New("exit status 1"), Stderr: "SyntaxError: invalid syntax", Hints: []Hint{{Match: regexp.MustCompile(`SyntaxError`), Text: "Check the syntax."}}},
			contains: []string{"Hints:\n- Check the syntax.\n"},
		},
		{
			name:     "backticks in the output get a longer fence",
			in:       FeedbackInput{PreviousOutput: "see ```go\nx\n```", Err: errors.New("bad")},
			contains: []string{"````\nsee ```go\nx\n```\n````\n"},
		},
		{
			name:     "long output keeps head and tail",
			in:       FeedbackInput{PreviousOutput: "abcdefghijklmnopqrstuvwxyz", MaxOutput: 8, Err: errors.New("bad")},
			contains: []string{"```\nabcdef\n[… 18 characters omitted …]\nyz\n```"},
		},
		{
			name:     "cap counts runes, not bytes",
			in:       FeedbackInput{PreviousOutput: "ééééé", MaxOutput: 5, Err: errors.New("bad")},
			contains: []string{"```\nééééé\n```"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FormatFeedback(tt.in)
			for _, c := range tt.contains {
				if !strings.Contains(got, c) {
					t.Errorf("feedback lacks %q:\n%s", c, got)
				}
			}
			for _, c := range tt.lacks {
				if strings.Contains(got, c) {
					t.Errorf("feedback has %q but should not:\n%s", c, got)
				}
			}
		})
	}
}

func FuzzFormatFeedback(f *testing.F) {
	f.Add(`{"es": "hola"`, "unexpected end of JSON input", "Traceback\n  File \"x.py\", line 1\nValueError", 0)
	f.Add("```\n```", "", "", 3)
	f.Add("", "a\nb", "\n\n\n", 1)
	hints := []Hint{{Match: regexp.MustCompile(`JSON`), Text: "Answer with JSON."}, {Text: "Be brief."}}
	f.Fuzz(func(t *testing.T, output, msg, stderr string, maxOutput int) {
		maxOutput %= 10000
		var err error
		if msg != "" {
			err = errors.New(msg)
		}
		in := FeedbackInput{PreviousOutput: output, Err: err, Stderr: stderr, Hints: hints, MaxOutput: maxOutput}
		got := FormatFeedback(in)
		if again := FormatFeedback(in); again != got {
			t.Fatal("FormatFeedback is not deterministic")
		}
		if m := strings.TrimSpace(msg); m != "" && !strings.Contains(got, m) {
			t.Fatalf("feedback lacks the error message %q", m)
		}
		if !strings.Contains(got, "- Be brief.") {
			t.Fatal("feedback lacks the hint with no pattern")
		}
		limit := maxOutput
		if limit <= 0 {
			limit = DefaultMaxFeedbackOutput
		}
		// The quoted output is capped; the rest is bounded by its inputs.
		if n := utf8.RuneCountInString(got); n > limit+utf8.RuneCountInString(msg)+utf8.RuneCountInString(stderr)+len(output)/2+600 && n > len(output)+len(msg)+len(stderr)+600 {
			t.Fatalf("feedback has %d runes for %d-rune cap", n, limit)
		}
	})
}
