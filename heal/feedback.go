package heal

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Hint is advice added to the feedback when its pattern matches, as the
// spec's heal.hints entries (- match: regex / hint: text) are.
type Hint struct {
	// Match is tried on the error message, on each cause the feedback
	// lists, and on stderr. A nil Match matches always: a standing
	// instruction.
	Match *regexp.Regexp
	// Text is what the model is told.
	Text string
}

// Defaults of FormatFeedback.
const (
	// DefaultMaxFeedbackOutput is how many runes of the previous output
	// the feedback quotes when FeedbackInput.MaxOutput is 0.
	DefaultMaxFeedbackOutput = 4000
	// FeedbackStderrLines is how many lines of stderr the feedback quotes.
	FeedbackStderrLines = 5
	// maxFeedbackLine caps each quoted line of stderr and each cause, in
	// runes, so one minified line cannot flood the prompt.
	maxFeedbackLine = 500
	// maxCauses caps the cause chain.
	maxCauses = 8
)

// FeedbackInput is what FormatFeedback turns into a message for the model.
type FeedbackInput struct {
	// PreviousOutput is the output that failed validation.
	PreviousOutput string
	// Err is why it failed. Its message is shown, then each layer of its
	// chain whose message adds something.
	Err error
	// Stderr is the validator's or command's stderr; when empty, the
	// first error in Err's chain with a Stderr() string method supplies it.
	Stderr string
	// Hints are added when they match Err's message, a listed cause, or
	// Stderr.
	Hints []Hint
	// MaxOutput caps the quoted previous output, in runes; 0 means
	// DefaultMaxFeedbackOutput. A longer output keeps its first three
	// quarters and its last quarter, since errors often sit at the end.
	MaxOutput int
}

// stderrCarrier is classify.StderrCarrier, declared where it is consumed.
type stderrCarrier interface{ Stderr() string }

// FormatFeedback writes the feedback of a heal re-ask: the previous output
// (fenced and capped), "The output failed validation:" and the error
// message, the cause chain, the first FeedbackStderrLines lines of stderr,
// and every matching hint, then asks for a corrected answer. It is
// deterministic: the same input gives the same text, so a response cache
// keyed on the prompt still works.
func FormatFeedback(f FeedbackInput) string {
	var b strings.Builder
	b.Grow(len(f.PreviousOutput) + 512)
	writePrevious(&b, f.PreviousOutput, f.MaxOutput)

	msg := ""
	if f.Err != nil {
		msg = strings.TrimSpace(f.Err.Error())
	}
	if msg == "" {
		b.WriteString("The output failed validation.\n")
	} else {
		b.WriteString("The output failed validation: ")
		b.WriteString(msg)
		b.WriteByte('\n')
	}
	causes := causeChain(f.Err, msg)
	writeList(&b, "\nCaused by:\n", causes)

	stderr := f.Stderr
	if stderr == "" && f.Err != nil {
		var sc stderrCarrier
		if errors.As(f.Err, &sc) {
			stderr = sc.Stderr()
		}
	}
	// A command validator's error often is its stderr: say it once.
	if strings.TrimSpace(stderr) != msg {
		writeStderr(&b, stderr)
	}
	writeList(&b, "\nHints:\n", matchingHints(f.Hints, msg, causes, stderr))
	b.WriteString("\nCorrect the problem and answer again with the complete output, not only the changed part.\n")
	return b.String()
}

// writePrevious writes the previous output, fenced and capped at maxRunes runes.
func writePrevious(b *strings.Builder, out string, maxRunes int) {
	if out == "" {
		b.WriteString("Your previous output was empty.\n\n")
		return
	}
	quoted := capRunes(out, maxRunes)
	fence := fenceFor(quoted)
	b.WriteString("Your previous output:\n")
	b.WriteString(fence)
	b.WriteByte('\n')
	b.WriteString(quoted)
	if !strings.HasSuffix(quoted, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(fence)
	b.WriteString("\n\n")
}

// writeList writes title and one "- " line per item; nothing when there
// is no item.
func writeList(b *strings.Builder, title string, items []string) {
	if len(items) == 0 {
		return
	}
	b.WriteString(title)
	for _, it := range items {
		b.WriteString("- ")
		b.WriteString(it)
		b.WriteByte('\n')
	}
}

// writeStderr writes the first FeedbackStderrLines lines of stderr, fenced.
func writeStderr(b *strings.Builder, stderr string) {
	lines, more := firstLines(stderr, FeedbackStderrLines)
	if len(lines) == 0 {
		return
	}
	fence := fenceFor(strings.Join(lines, "\n"))
	b.WriteString("\nFirst lines of stderr:\n")
	b.WriteString(fence)
	b.WriteByte('\n')
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if more > 0 {
		fmt.Fprintf(b, "[%d more lines]\n", more)
	}
	b.WriteString(fence)
	b.WriteByte('\n')
}

// matchingHints returns the texts of the hints that apply to the error,
// each once, in order: a hint without a pattern always applies.
func matchingHints(hints []Hint, msg string, causes []string, stderr string) []string {
	var out []string
	seen := make(map[string]bool, len(hints))
	for _, h := range hints {
		text := strings.TrimSpace(h.Text)
		if text == "" || seen[text] {
			continue
		}
		if h.Match != nil && !hintMatches(h.Match, msg, causes, stderr) {
			continue
		}
		seen[text] = true
		out = append(out, text)
	}
	return out
}

// hintMatches reports whether re matches the error message, one of the
// causes the feedback lists, or stderr.
func hintMatches(re *regexp.Regexp, msg string, causes []string, stderr string) bool {
	if re.MatchString(msg) || stderr != "" && re.MatchString(stderr) {
		return true
	}
	for _, c := range causes {
		if re.MatchString(c) {
			return true
		}
	}
	return false
}

// causeChain returns the messages of the layers under err that say
// something the top message and earlier layers do not: a layer wrapped
// with %w repeats its cause, so only causes whose own Error() drops the
// wrapped text appear. Joined errors are walked depth first.
func causeChain(err error, top string) []string {
	if err == nil {
		return nil
	}
	var causes []string
	said := func(m string) bool {
		if strings.Contains(top, m) {
			return true
		}
		for _, c := range causes {
			if strings.Contains(c, m) {
				return true
			}
		}
		return false
	}
	var walk func(e error, depth int)
	walk = func(e error, depth int) {
		if depth > 32 || len(causes) >= maxCauses {
			return
		}
		var children []error
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			if c := u.Unwrap(); c != nil {
				children = []error{c}
			}
		case interface{ Unwrap() []error }:
			children = u.Unwrap()
		}
		for _, c := range children {
			if c == nil || len(causes) >= maxCauses {
				continue
			}
			m := strings.TrimSpace(c.Error())
			if m != "" && !said(m) {
				causes = append(causes, capLine(m))
			}
			walk(c, depth+1)
		}
	}
	walk(err, 0)
	return causes
}

// firstLines returns up to n lines of s from its first non-blank line,
// right-trimmed and capped, and how many non-blank lines it left out.
func firstLines(s string, n int) (lines []string, more int) {
	for line := range strings.Lines(s) {
		line = strings.TrimRight(line, " \t\r\n")
		if len(lines) == 0 && strings.TrimSpace(line) == "" {
			continue
		}
		if len(lines) < n {
			lines = append(lines, capLine(line))
			continue
		}
		if strings.TrimSpace(line) != "" {
			more++
		}
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines, more
}

func capLine(s string) string {
	if utf8.RuneCountInString(s) <= maxFeedbackLine {
		return s
	}
	i := 0
	for n := 0; n < maxFeedbackLine; n++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + " […]"
}

// capRunes keeps s whole when it has at most limit runes (0: the
// default), else its first three quarters and last quarter around a marker.
func capRunes(s string, limit int) string {
	if limit <= 0 {
		limit = DefaultMaxFeedbackOutput
	}
	total := utf8.RuneCountInString(s)
	if total <= limit {
		return s
	}
	head := limit * 3 / 4
	tail := limit - head
	headEnd := runeOffset(s, head)
	tailStart := runeOffset(s, total-tail)
	return fmt.Sprintf("%s\n[… %d characters omitted …]\n%s", s[:headEnd], total-head-tail, s[tailStart:])
}

// runeOffset returns the byte offset of the n-th rune of s.
func runeOffset(s string, n int) int {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}

// fenceFor returns a Markdown fence longer than any run of backticks in s,
// so the quoted text cannot close it.
func fenceFor(s string) string {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}
