package classify

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseExceptionLine: whatever the line, a parse that succeeds splits
// the trimmed line into a dotted name, its last part and the message,
// without losing or inventing text.
func FuzzParseExceptionLine(f *testing.F) {
	for _, s := range []string{
		"requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='api.openai.com', port=443): Read timed out. (read timeout=600)",
		"httpx.PoolTimeout",
		"socket.timeout: timed out",
		"curl: (7) Failed to connect",
		"a..b: c",
		"É: x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		ex, ok := parseExceptionLine(line)
		if !ok {
			if ex != (exceptionLine{}) {
				t.Fatalf("failed parse returned %+v", ex)
			}
			return
		}
		s := strings.TrimSpace(line)
		if !strings.HasPrefix(s, ex.Name) || !strings.HasSuffix(ex.Name, ex.Class) || ex.Class == "" {
			t.Fatalf("%q: name %q, class %q do not come from the line", line, ex.Name, ex.Class)
		}
		if strings.Contains(ex.Class, ".") || strings.HasPrefix(ex.Name, ".") || strings.Contains(ex.Name, "..") {
			t.Fatalf("%q: name %q is not a dotted identifier", line, ex.Name)
		}
		if ex.Message != "" && !strings.HasSuffix(s, ex.Message) {
			t.Fatalf("%q: message %q is not the line's end", line, ex.Message)
		}
	})
}

// FuzzStatusIn: a status found is an HTTP status whose digits are in the
// text.
func FuzzStatusIn(f *testing.F) {
	for _, s := range []string{
		"Error code: 429 - {'error': {'code': 'insufficient_quota'}}",
		"HTTP Error 503: Service Unavailable",
		"429, message='Too Many Requests'",
		"curl: (22) The requested URL returned error: 503",
		"HTTP/1.1 502 Bad Gateway",
		"5030 Service Unavailable",
		"Error code: ",
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, text string, leading bool) {
		st := statusIn(text, leading)
		if st == 0 {
			return
		}
		if st < 100 || st > 599 || !strings.Contains(text, strconv.Itoa(st)) {
			t.Fatalf("statusIn(%q, %v) = %d", text, leading, st)
		}
		if !leading && statusIn(text, true) == 0 {
			t.Fatalf("statusIn(%q) found %d only without leading", text, st)
		}
	})
}

// FuzzStderrSignal: any stderr classifies without panicking, to a class
// with a reason, and the same stderr always the same way.
func FuzzStderrSignal(f *testing.F) {
	for _, s := range []string{
		pyTraceback("openai.RateLimitError: Error code: 429 - {'error': {'code': 'insufficient_quota'}}"),
		pyTraceback("AssertionError: host unreachable"),
		"ssh: connect to host build-7 port 22: No route to host\n",
		"E       assert 1 == 2\n",
		"Traceback (most recent call last):\n",
		"panic: dial tcp: i/o timeout\n\ngoroutine 1 [running]:\n",
		"\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stderr string) {
		d, ok := stderrSignal(stderr)
		if !ok {
			if d != (Decision{}) {
				t.Fatalf("no decision, yet %v", d)
			}
			return
		}
		if d.Class == Unknown || d.Class > Canceled || d.Reason == "" {
			t.Fatalf("stderrSignal(%q) = %v", stderr, d)
		}
		if again, _ := stderrSignal(stderr); again != d {
			t.Fatalf("stderrSignal(%q) = %v, then %v", stderr, d, again)
		}
	})
}
