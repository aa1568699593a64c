package classify

import (
	"strconv"
	"strings"
)

// stderrSignal classifies a command's stderr by the lines most likely to
// say why it failed. The headline decides first: a Python exception by its
// class (and the status or code its message names), a test failure or a
// program's own mistake (ValueError) by deciding nothing. A headline that
// ends a traceback or is a Go panic is the only line read, with the
// exceptions it was raised from: the lines around it are frames, source
// code and goroutines, not the program's words. Otherwise the last few non-empty lines are read too (a script
// that reports a failed download and then exits with its own words).
func stderrSignal(stderr string) (Decision, bool) {
	h, traceback := headline(stderr)
	if h == "" {
		return Decision{}, false
	}
	var tail []string
	if !traceback {
		tail = lastLines(stderr, tailLines)
		for _, l := range tail {
			// A test report's last lines quote the test's values, over
			// as many lines as they take (Node's AssertionError, then
			// the two values): none of them is a signal.
			if isTestFailure(strings.TrimSpace(l)) {
				return Decision{}, false
			}
		}
	}
	d, v := lineSignal(h)
	switch {
	case v == lineDecides:
		return d, true
	case v == lineConclusive:
		return Decision{}, false
	case traceback:
		return causeSignal(stderr, h)
	}
	for _, l := range tail {
		if d, v := lineSignal(l); v == lineDecides {
			return d, true
		}
	}
	return Decision{}, false
}

// causeSignal classifies a traceback whose last exception said nothing
// (a program's own "RuntimeError: fetch failed", tenacity's RetryError) by
// the exceptions it was raised from: "raise X from err" prints err's
// traceback first and then "The above exception was the direct cause of
// the following exception". The nearest cause that decides wins.
func causeSignal(stderr, last string) (Decision, bool) {
	for _, cause := range directCauses(stderr) {
		d, v := lineSignal(cause)
		switch v {
		case lineDecides:
			name := last
			if ex, ok := parseExceptionLine(last); ok {
				name = ex.Name
			}
			d.Reason += " (cause of " + name + ")"
			return d, true
		case lineConclusive:
			return Decision{}, false
		}
	}
	return Decision{}, false
}

// directCause is the line Python prints between an exception's traceback
// and that of the exception raised from it.
const directCause = "The above exception was the direct cause of the following exception"

// directCauses returns the exception lines of the tracebacks the last one
// was raised from, nearest first, as long as each was the direct cause of
// the next ("During handling of the above exception" is a new failure in
// a handler, not its cause).
func directCauses(stderr string) []string {
	lines := strings.Split(strings.ReplaceAll(stderr, "\r\n", "\n"), "\n")
	tb := lastTracebackHeader(lines, len(lines))
	var causes []string
	for tb > 0 {
		sep := tb - 1
		for sep >= 0 && strings.TrimSpace(lines[sep]) == "" {
			sep--
		}
		if sep < 0 || !strings.HasPrefix(lines[sep], directCause) {
			break
		}
		prev := lastTracebackHeader(lines, sep)
		if prev < 0 {
			break
		}
		for _, l := range lines[prev+1 : sep] {
			if l != "" && l[0] != ' ' && l[0] != '\t' {
				causes = append(causes, strings.TrimSpace(l))
				break
			}
		}
		tb = prev
	}
	return causes
}

// lastTracebackHeader returns the index of the last "Traceback (most
// recent call last):" line before lines[end], -1 if there is none.
func lastTracebackHeader(lines []string, end int) int {
	for i := end - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "Traceback (most recent call last):") {
			return i
		}
	}
	return -1
}

// lastLines returns the last n non-empty lines of text, the last first.
func lastLines(text string, n int) []string {
	lines := strings.Split(strings.TrimRight(text, " \t\r\n"), "\n")
	var tail []string
	for i := len(lines) - 1; i >= 0 && len(tail) < n; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			tail = append(tail, lines[i])
		}
	}
	return tail
}

// tailLines is how many of stderr's last non-empty lines the stderr
// signals read.
const tailLines = 5

// lineVerdict is what one line of stderr says.
type lineVerdict uint8

const (
	// lineSilent: no signal; other lines may speak.
	lineSilent lineVerdict = iota
	// lineDecides: the line decides the class.
	lineDecides
	// lineConclusive: the line is the failure's conclusion and decides
	// nothing (a failed assertion, a ValueError), so neither do the lines
	// above it.
	lineConclusive
)

// lineSignal classifies one line of stderr by whole signals: an exception
// line by its class, a test failure never, and other text by a status it
// names or a signal phrase. Words inside an assertion's text ("assert
// host == 'unreachable'") or a program's own error ("ValueError: invalid
// timeout") are no signal.
func lineSignal(line string) (Decision, lineVerdict) {
	s := strings.TrimSpace(line)
	if isTestFailure(s) {
		return Decision{}, lineConclusive
	}
	if ex, ok := parseExceptionLine(s); ok {
		d, kind, ok := ex.decide()
		switch {
		case ok:
			return d, lineDecides
		case kind.plain:
			return Decision{}, lineConclusive
		}
		// A class tenax does not know ("Exception: upstream said 503
		// Service Unavailable") or one whose message must speak: its
		// message is the program's account of the failure.
		if d, ok := textSignal(ex.Message); ok {
			return d, lineDecides
		}
		return Decision{}, lineSilent
	}
	if d, ok := textSignal(s); ok {
		return d, lineDecides
	}
	return Decision{}, lineSilent
}

// textSignal classifies free text by the HTTP status it names ("503
// Service Unavailable", "Error code: 429"), decided as a response's
// status is, else by a signal phrase.
func textSignal(text string) (Decision, bool) {
	if st := statusIn(text, false); st != 0 {
		if d, ok := byStatus(&statusLine{line: text, status: st, code: providerCodeIn(text)}); ok {
			return d, true
		}
	}
	for _, p := range signalPhrases {
		if indexFold(text, p, true) >= 0 {
			return Decision{Class: Retryable, Reason: "keyword " + strconv.Quote(p)}, true
		}
	}
	return Decision{}, false
}

// signalPhrases are the words of a failed connection, a timeout or an
// overloaded server, each matched as a whole phrase, any case. The classic
// words ("connection", "network", "unreachable", "refused", "reset",
// "timeout") are signals in these phrases, not alone: "unreachable code"
// and "password reset" are not network failures.
var signalPhrases = [...]string{
	"no route to host",
	"network is unreachable",
	"network unreachable",
	"host is unreachable",
	"host unreachable",
	"network is down",
	"network error",
	"network connection was lost",
	"connection reset",
	"reset by peer",
	"connection refused",
	"connection aborted",
	"connection closed",
	"connection error",
	"connection lost",
	"connection broken",
	"failed to establish a new connection",
	"failed to connect",
	"could not connect",
	"cannot connect",
	"unable to connect",
	"server disconnected",
	"remote end closed connection",
	"socket hang up",
	"broken pipe",
	"timed out",
	"timeout",
	"temporarily unavailable",
	"temporary failure",
	"try again",
	"service unavailable",
	"bad gateway",
	"too many requests",
	"rate limit",
	"EOF",
	"EAI_AGAIN",
	"ECONNRESET",
	"ECONNREFUSED",
	"ECONNABORTED",
	"ETIMEDOUT",
	"EHOSTUNREACH",
	"ENETUNREACH",
	"EPIPE",
}

// testFailurePrefixes start the lines test runners print for a failed
// test: pytest's "E   assert …" and "FAILED tests/…", unittest's "FAIL:",
// go test's "--- FAIL" and "FAIL\tpkg", Node's "AssertionError
// [ERR_ASSERTION]", Rust's "assertion `left == right` failed", TAP's "not
// ok", Jest's "expect(received)".
var testFailurePrefixes = [...]string{
	"AssertionError",
	"assert ",
	"assertion failed",
	"assertion `",
	"E  ",
	"FAILED ",
	"FAIL:",
	"FAIL ",
	"FAIL\t",
	"--- FAIL",
	"not ok ",
	"expect(",
}

// isTestFailure reports whether the trimmed line s is a test runner's
// report of a failed test or assertion, whose text quotes the test's
// values and not the failure's cause.
func isTestFailure(s string) bool {
	for _, p := range testFailurePrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	if ex, ok := parseExceptionLine(s); ok {
		// pytest's pytest.fail() and unittest's subclasses of AssertionError.
		if strings.HasSuffix(ex.Class, "AssertionError") || ex.Class == "Failed" && strings.Contains(ex.Name, "pytest") {
			return true
		}
	}
	// A go test log line: "    client_test.go:42: want connection refused".
	if i := strings.Index(s, "_test.go:"); i > 0 && !strings.ContainsAny(s[:i], " \t") {
		rest := s[i+len("_test.go:"):]
		j := 0
		for j < len(rest) && '0' <= rest[j] && rest[j] <= '9' {
			j++
		}
		return j > 0 && j < len(rest) && rest[j] == ':'
	}
	return false
}
