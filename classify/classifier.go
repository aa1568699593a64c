package classify

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// Classifier decides the Class of an attempt's error. It is an immutable
// value, safe to share between goroutines; the zero Classifier applies the
// defaults of the package documentation.
type Classifier struct {
	// Rules are evaluated first, in order; the first match decides.
	Rules []Rule
	// Otherwise is the class of an error that carries no signal at all
	// (step 7 of the package documentation): Item when left Unknown.
	// Retryable gives the behaviour of cenkalti/backoff, retry-go and
	// failsafe-go, which retry every error they are not told to stop on;
	// the reason is then "no signal" still.
	Otherwise Class
}

// Classify classifies err with the zero Classifier: the defaults only.
func Classify(err error) Decision { return Classifier{}.Classify(err) }

// Classify returns the class of err and the reason it was chosen. A nil
// err gives the zero Decision. The order is: c.Rules, a WithClass mark,
// context cancellation and attempt deadline, x-should-retry, status and
// provider code, exit code and signal, Go's own error types, keywords in
// the message, and otherwise Item with the reason "no signal".
func (c Classifier) Classify(err error) Decision {
	if err == nil {
		return Decision{}
	}
	if len(c.Rules) > 0 {
		msg := err.Error()
		s := carriedBy(err)
		for i := range c.Rules {
			if r := &c.Rules[i]; r.matches(msg, &s) {
				return Decision{Class: r.Class, Reason: r.reason()}
			}
		}
	}
	if d, ok := classOf(err); ok {
		return d
	}
	return defaults(err, c.Otherwise)
}

// The unexported error-typed views of the signal interfaces let
// errors.AsType find them without allocating.
type (
	statusError interface {
		error
		StatusCoder
	}
	providerCodeError interface {
		error
		ProviderCoder
	}
	exitError interface {
		error
		ExitCoder
	}
	shouldRetryError interface {
		error
		ShouldRetrier
	}
	stderrError interface {
		error
		StderrCarrier
	}
	requestIDError interface {
		error
		RequestIDer
	}
)

// carried is what an error's chain says about itself, for rules.
type carried struct {
	status    int
	code      string
	exit      int
	hasExit   bool
	stderr    string
	hasStderr bool
}

func carriedBy(err error) carried {
	var s carried
	if e, ok := errors.AsType[statusError](err); ok {
		s.status = e.HTTPStatus()
	}
	if e, ok := errors.AsType[providerCodeError](err); ok {
		s.code = e.ProviderCode()
	}
	if e, ok := errors.AsType[exitError](err); ok {
		s.exit, s.hasExit = e.ExitCode(), true
	}
	if e, ok := errors.AsType[stderrError](err); ok {
		s.stderr, s.hasStderr = e.Stderr(), true
	}
	return s
}

// defaults applies the built-in order after rules and marks; otherwise is
// the class when no step decides (Unknown: Item).
func defaults(err error, otherwise Class) Decision {
	// An interrupted attempt's other signals (a killed process, a cut
	// body) are consequences of the interruption, so these come first.
	if errors.Is(err, context.Canceled) {
		return Decision{Class: Canceled, Reason: "run canceled"}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Decision{Class: Retryable, Reason: "attempt deadline"}
	}
	noRetry := false
	if e, ok := errors.AsType[shouldRetryError](err); ok {
		if retry, ok := e.ShouldRetry(); ok {
			if retry {
				return Decision{Class: Retryable, Reason: "x-should-retry: true"}
			}
			noRetry = true
		}
	}
	d, ok := byStatus(err)
	if !ok {
		d, ok = byExit(err)
	}
	if !ok {
		d, ok = byGoError(err)
	}
	if !ok {
		d, ok = byKeyword(err.Error())
	}
	if !ok {
		d = Decision{Class: cmp.Or(otherwise, Item), Reason: "no signal"}
	}
	if noRetry && d.Class == Retryable {
		return Decision{Class: Item, Reason: "x-should-retry: false"}
	}
	return d
}

// byExit classifies by an ExitCoder's exit code and signal.
func byExit(err error) (Decision, bool) {
	e, ok := errors.AsType[exitError](err)
	if !ok {
		return Decision{}, false
	}
	if sig := e.Signal(); sig != "" {
		return Decision{Class: Retryable, Reason: "signal " + sig}, true
	}
	code := e.ExitCode()
	switch code {
	case 0:
		return Decision{}, false
	case 75, 124: // EX_TEMPFAIL; timeout(1)
		return Decision{Class: Retryable, Reason: "exit " + strconv.Itoa(code)}, true
	case 126, 127: // not executable; not found
		return Decision{Class: Fatal, Reason: "exit " + strconv.Itoa(code)}, true
	}
	// Any other code says only "failed": what the command wrote says
	// whether it is worth another try ("Connection reset by peer") or
	// none can help ("openai.AuthenticationError: Error code: 401").
	if s, ok := errors.AsType[stderrError](err); ok {
		if d, ok := stderrSignal(s.Stderr()); ok {
			d.Reason = "exit " + strconv.Itoa(code) + ", stderr " + d.Reason
			return d, true
		}
	}
	return Decision{Class: Item, Reason: "exit " + strconv.Itoa(code)}, true
}

// transientErrnos are the system errors of a connection that a new
// attempt may well not meet.
var transientErrnos = [...]struct {
	errno syscall.Errno
	name  string
}{
	{syscall.ECONNRESET, "ECONNRESET"},
	{syscall.ECONNREFUSED, "ECONNREFUSED"},
	{syscall.ECONNABORTED, "ECONNABORTED"},
	{syscall.EPIPE, "EPIPE"},
	{syscall.EHOSTUNREACH, "EHOSTUNREACH"},
	{syscall.ENETUNREACH, "ENETUNREACH"},
}

// byGoError classifies by the standard library's error types and values.
func byGoError(err error) (Decision, bool) {
	if _, ok := errors.AsType[*exec.Error](err); ok {
		if errors.Is(err, exec.ErrNotFound) {
			return Decision{Class: Fatal, Reason: "command not found"}, true
		}
		return Decision{Class: Fatal, Reason: "command not runnable"}, true
	}
	if pe, ok := errors.AsType[*os.PathError](err); ok && pe.Op == "fork/exec" {
		switch {
		case errors.Is(pe.Err, syscall.ENOENT):
			return Decision{Class: Fatal, Reason: "command not found"}, true
		case errors.Is(pe.Err, syscall.EACCES), errors.Is(pe.Err, syscall.ENOEXEC):
			return Decision{Class: Fatal, Reason: "command not executable"}, true
		}
	}
	if de, ok := errors.AsType[*net.DNSError](err); ok {
		switch {
		case de.IsNotFound:
			return Decision{Class: Fatal, Reason: "DNS not found"}, true
		case de.IsTimeout:
			return Decision{Class: Retryable, Reason: "DNS timeout"}, true
		case de.IsTemporary:
			return Decision{Class: Retryable, Reason: "DNS temporary"}, true
		}
	}
	for _, t := range transientErrnos {
		if errors.Is(err, t.errno) {
			return Decision{Class: Retryable, Reason: t.name}, true
		}
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return Decision{Class: Retryable, Reason: "net.Error timeout"}, true
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return Decision{Class: Retryable, Reason: "unexpected EOF"}, true
	}
	if errors.Is(err, io.EOF) {
		if _, ok := errors.AsType[*url.Error](err); ok {
			return Decision{Class: Retryable, Reason: "EOF from transport"}, true
		}
	}
	return Decision{}, false
}

// keywords are the default rule for errors that carry nothing better.
var keywords = [...]struct {
	word  string
	whole bool // must stand as a word: "EOF" but not "geofence"
}{
	{"timeout", false},
	{"timed out", false},
	{"connection reset", false},
	{"connection refused", false},
	{"reset by peer", false},
	{"broken pipe", false},
	{"temporarily unavailable", false},
	{"try again", false},
	{"EOF", true},
	// The network or the resolver failing on the way: Python's "[Errno
	// 101] Network is unreachable", Node's "getaddrinfo EAI_AGAIN",
	// glibc's "Temporary failure in name resolution".
	{"network", true},
	{"unreachable", true},
	{"EAI_AGAIN", true},
	{"temporary failure", false},
}

// byKeyword classifies a message by the keywords, case-insensitively.
func byKeyword(msg string) (Decision, bool) {
	for _, k := range keywords {
		if indexFold(msg, k.word, k.whole) >= 0 {
			return Decision{Class: Retryable, Reason: "keyword " + strconv.Quote(k.word)}, true
		}
	}
	return Decision{}, false
}

// indexFold returns the first index of word in s, ignoring ASCII case,
// or -1. With whole, the match must not touch a letter or digit on either
// side. It does not allocate, unlike strings.ToLower.
func indexFold(s, word string, whole bool) int {
	n := len(word)
	for i := 0; i+n <= len(s); i++ {
		if !equalFoldASCII(s[i:i+n], word) {
			continue
		}
		if whole && ((i > 0 && isWordByte(s[i-1])) || (i+n < len(s) && isWordByte(s[i+n]))) {
			continue
		}
		return i
	}
	return -1
}

func equalFoldASCII(a, b string) bool {
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= lowerASCII(c) && lowerASCII(c) <= 'z'
}
