package heal

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormalizeReplacesVariableParts(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"line number", "line 12: unexpected token", "line <int>: unexpected token"},
		{"absolute path", "open /etc/passwd: permission denied", "open <path>: permission denied"},
		{"relative go path with line and column", "./main.go:12:5: undefined: foo", "<path>:<n>:<n>: undefined: foo"},
		{"bare file with line and column", "main.go:12:5: undefined: foo", "<path>:<n>:<n>: undefined: foo"},
		{"python path with line", "src/x.py:40: AssertionError", "<path>:<n>: AssertionError"},
		{"tsc location in parentheses", "src/index.ts(3,7): error TS2322: Type 'string' is not assignable", "<path>(<n>,<n>): error TS2322: Type <quoted> is not assignable"},
		{"windows path", `C:\x\y.cs(12,5): error CS1002: ; expected`, "<path>(<n>,<n>): error CS1002: ; expected"},
		{"uuid", "request 550e8400-e29b-41d4-a716-446655440000 failed", "request <uuid> failed"},
		{"ipv4 with port", "dial tcp 10.0.0.12:5432: connect: connection refused", "dial tcp <ip>:<int>: connect: connection refused"},
		{"ipv6 loopback", "dial tcp [::1]:8080: connect: connection refused", "dial tcp [<ip>]:<int>: connect: connection refused"},
		{"ipv6 full form", "from 2001:0db8:85a3:0000:0000:8a2e:0370:7334 denied", "from <ip> denied"},
		{"url", `Get "https://api.example.com/v1/x?y=1" failed`, "Get <quoted> failed"},
		{"url unquoted ends before punctuation", "see https://example.com/a/b.", "see <url>."},
		{"hostname", "lookup api.example.com on 127.0.0.53:53: no such host", "lookup <hostname> on <ip>:<int>: no such host"},
		{"rfc3339 timestamp", "at 2024-01-02T15:04:05.123Z the job failed", "at <date> the job failed"},
		{"go time string", "deadline 2024-01-02 15:04:05 +0000 UTC passed", "deadline <date> UTC passed"},
		{"rfc1123 date", "Mon, 02 Jan 2006 15:04:05 MST expired", "<date> expired"},
		{"time of day", "at 15:04:05.999 retry", "at <date> retry"},
		{"durations", "took 1.5s, budget 300ms, total 2m3s", "took <duration>, budget <duration>, total <duration>"},
		{"hex addresses", "code=0x1 addr=0x0 pc=0x4a5b2c", "code=<hex> addr=<hex> pc=<hex>"},
		{"short and long git sha", "commit 9fceb02 is not an ancestor of 9fceb02d0ae598e95dc970b74767f19372d61af8", "commit <hash> is not an ancestor of <hash>"},
		{"md5", "checksum d41d8cd98f00b204e9800998ecf8427e mismatch", "checksum <hash> mismatch"},
		{"hex-looking words stay", "deadbeef facade Decade12", "deadbeef facade Decade12"},
		{"digits inside identifiers stay", "utf8 v2 x86_64 base64", "utf8 v2 x86_64 base64"},
		{"slashed words are not paths", "and/or input/output error", "and/or input/output error"},
		{"fractions are numbers", "progress 1/2", "progress <int>/<int>"},
		{"single quoted value", "KeyError: 'name'", "KeyError: <quoted>"},
		{"double quoted value", `json: unknown field "foo"`, "json: unknown field <quoted>"},
		{"assigned quoted values", `key='abc' other="x y" n=12`, "key=<value> other=<value> n=<int>"},
		{"apostrophes are not quotes", "can't parse 'x' isn't valid", "can't parse <quoted> isn't valid"},
		{"escaped quote inside quotes", `got "a \"b\" c" here`, "got <quoted> here"},
		{"unclosed quote stays", "it's 'open", "it's 'open"},
		{"floats and negative ints", "expected 3.14 got 2.5e-3 and -7", "expected <float> got <float> and <int>"},
		{"a sign after a word is an operator", "x-1 and f(a)-2 but = -3", "x-<int> and f(a)-<int> but = <int>"},
		{"versions", "requires v1.2.3-rc1, have 1.2.3", "requires <version>, have <version>"},
		{"email", "mail bob@example.org now", "mail <email> now"},
		{"c++ scope is not ipv6", "std::io::Error a::b", "std::io::Error a::b"},
		{"module path with two slashes", "see github.com/foo/bar/baz", "see <path>"},
		{"sentence period after a path", "the file /tmp/x.txt.", "the file <path>."},
		{"first two non-empty lines, folded", "\x1b[31mError\x1b[0m:  boom\n\n  second\tline  \nthird line", "Error: boom second line"},
		{"empty", "", ""},
		{"only whitespace", " \n\t\n", ""},
	}
	if len(tests) < 25 {
		t.Fatalf("the table must keep at least 25 cases, has %d", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Normalize(tt.in); got != tt.want {
				t.Errorf("Normalize(%q)\n got  %q\n want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestFingerprintIgnoresVariableParts(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{"line numbers", "syntax error at line 12", "syntax error at line 40"},
		{"uuids", "job 550e8400-e29b-41d4-a716-446655440000 not found", "job 123e4567-e89b-12d3-a456-426614174000 not found"},
		{"paths and positions", "/home/a/x.go:12:5: undefined: foo", "/srv/b/y.go:7:1: undefined: foo"},
		{"timestamps", "token expired at 2024-01-02T15:04:05Z", "token expired at 2025-11-30T01:00:00+02:00"},
		{"white space and later lines", "boom:   bad\nsecond\nthird A", "boom: bad\n\nsecond\nthird B"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fa, fb := Fingerprint("check", tt.a), Fingerprint("check", tt.b)
			if fa != fb {
				t.Errorf("fingerprints differ: %q → %s (%q), %q → %s (%q)", tt.a, fa, Normalize(tt.a), tt.b, fb, Normalize(tt.b))
			}
		})
	}
}

func TestFingerprintSeparatesDifferentErrors(t *testing.T) {
	tests := []struct {
		name        string
		nameA, msgA string
		nameB, msgB string
	}{
		{"different messages", "check", "undefined: foo", "check", "missing return"},
		{"same message, different check", "TestA", "got 1, want 2", "TestB", "got 1, want 2"},
		{"name and message do not run together", "a", "b c", "a b", "c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fa, fb := Fingerprint(tt.nameA, tt.msgA), Fingerprint(tt.nameB, tt.msgB)
			if fa == fb {
				t.Errorf("(%q, %q) and (%q, %q) share fingerprint %s", tt.nameA, tt.msgA, tt.nameB, tt.msgB, fa)
			}
		})
	}
}

func TestFingerprintIsSixteenHexCharacters(t *testing.T) {
	fp := Fingerprint("TestX", "boom")
	if len(fp) != 16 || strings.Trim(fp, "0123456789abcdef") != "" {
		t.Fatalf("Fingerprint = %q, want 16 lowercase hex characters", fp)
	}
	if again := Fingerprint("TestX", "boom"); again != fp {
		t.Fatalf("Fingerprint is not deterministic: %q then %q", fp, again)
	}
}

func FuzzNormalize(f *testing.F) {
	for _, seed := range []string{
		"line 12: unexpected token",
		"./main.go:12:5: undefined: foo",
		`C:\x\y.cs(12,5): error`,
		"dial tcp [::1]:8080: connect: connection refused",
		`key='abc' other="x y" n=12`,
		"2024-01-02T15:04:05Z 1.5s 0x1f 9fceb02",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		once := Normalize(msg)
		twice := Normalize(once)
		if twice != once {
			t.Fatalf("not idempotent:\n input %q\n once  %q\n twice %q", msg, once, twice)
		}
		// The longest expansion is a 2-byte duration such as "1s" becoming
		// "<duration>": five times the input.
		if len(once) > 5*len(msg) {
			t.Fatalf("Normalize(%q) = %q: %d bytes from %d", msg, once, len(once), len(msg))
		}
		if utf8.ValidString(msg) && !utf8.ValidString(once) {
			t.Fatalf("Normalize(%q) = %q is not valid UTF-8", msg, once)
		}
		if strings.ContainsAny(once, "\n\r\t") {
			t.Fatalf("Normalize(%q) = %q still has line breaks or tabs", msg, once)
		}
	})
}

func BenchmarkNormalize(b *testing.B) {
	msgs := []string{
		"./internal/store/jsonl.go:142:17: cannot use x (variable of type int) as string value in argument to f",
		`Get "https://api.example.com/v1/items/550e8400-e29b-41d4-a716-446655440000": dial tcp 10.0.0.12:443: i/o timeout after 30s`,
		"unexpected end of JSON input",
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Normalize(msgs[i%len(msgs)])
	}
}

// An assertion whose value changed sign between checks (Add(2, 3) = -1,
// later = 1) was fingerprinted as a new error, so a regression was
// reported as new.
func TestFingerprintSurvivesAssertionValueChange(t *testing.T) {
	pairs := [][2]string{
		{"calc_test.go:7: Add(2, 3) = -1, want 5", "calc_test.go:9: Add(2, 3) = 1, want 5"},
		{"assert -1 == 5", "assert 7 == 5"},
		{"expected -1.5 to be 5", "expected 2.5 to be 5"},
		{`Greet("Ann") = "Hello Ann", want "Hello, Ann!"`, `Greet("Ann") = "Hi", want "Hello, Ann!"`},
	}
	for _, p := range pairs {
		if a, b := Fingerprint("TestAdd", p[0]), Fingerprint("TestAdd", p[1]); a != b {
			t.Errorf("%q and %q: fingerprints %s and %s differ; want one error (normalized %q and %q)", p[0], p[1], a, b, Normalize(p[0]), Normalize(p[1]))
		}
	}
}

// TestRequestIDsShareOneFingerprint: identical provider errors that quote
// their own request ids (the mock's req_mock000000000132, OpenAI's
// chatcmpl-…, Anthropic's msg_01…) are one error group, not one per request.
func TestRequestIDsShareOneFingerprint(t *testing.T) {
	cases := [][2]string{
		{"500 server_error: The server had an error (request req_mock000000000132)", "500 server_error: The server had an error (request req_mock000000000977)"},
		{"stream cut in chatcmpl-AbC123xyz9QrT", "stream cut in chatcmpl-ZZy981abcQQQ"},
		{"overloaded (request_id msg_01XFDUDYJgAACzvnptvVoYEL)", "overloaded (request_id msg_01Hq2ZZaB7cdEFghIJKL)"},
	}
	for _, c := range cases {
		if a, b := Normalize(c[0]), Normalize(c[1]); a != b {
			t.Errorf("Normalize gives %q and %q: the same error with another request id must normalize alike", a, b)
		}
	}
	if got := Normalize("read_timeout exceeded"); got != "read_timeout exceeded" {
		t.Errorf("Normalize(%q) = %q: a snake_case word without digits is not an id", "read_timeout exceeded", got)
	}
}
