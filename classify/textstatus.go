package classify

import "strings"

// statusLine is a line of a command's stderr that names an HTTP status
// and perhaps a provider code, seen as the error of a response, so that
// byStatus decides it by the rules of the HTTP and LLM tasks.
type statusLine struct {
	line   string
	status int
	code   string
}

func (s *statusLine) Error() string        { return s.line }
func (s *statusLine) HTTPStatus() int      { return s.status }
func (s *statusLine) ProviderCode() string { return s.code }

// statusPrefixes introduce a status in the words of the clients that
// print one: openai and anthropic ("Error code: 429"), urllib ("HTTP
// Error 503: Service Unavailable"), curl ("The requested URL returned
// error: 503"), axios and many more ("status code 503"), and a status line
// ("HTTP/1.1 503 Service Unavailable").
var statusPrefixes = [...]string{
	"Error code: ",
	"HTTP Error ",
	"returned error: ",
	"status code: ",
	"status code ",
	"HTTP/1.0 ",
	"HTTP/1.1 ",
	"HTTP/2 ",
	"HTTP/2.0 ",
	"HTTP/3 ",
}

// reasonPhrases are the reason phrases that, after a status, make "503
// Service Unavailable" a status and not a count: RFC 9110's, the older
// spellings still printed, and requests' "429 Client Error".
var reasonPhrases = map[int][]string{
	400: {"Bad Request"},
	401: {"Unauthorized"},
	402: {"Payment Required"},
	403: {"Forbidden"},
	404: {"Not Found"},
	405: {"Method Not Allowed"},
	408: {"Request Timeout"},
	409: {"Conflict"},
	410: {"Gone"},
	413: {"Content Too Large", "Payload Too Large", "Request Entity Too Large"},
	415: {"Unsupported Media Type"},
	422: {"Unprocessable Content", "Unprocessable Entity"},
	424: {"Failed Dependency"},
	425: {"Too Early"},
	429: {"Too Many Requests"},
	500: {"Internal Server Error"},
	501: {"Not Implemented"},
	502: {"Bad Gateway"},
	503: {"Service Unavailable", "Service Temporarily Unavailable"},
	504: {"Gateway Timeout", "Gateway Time-out"},
	529: {"Overloaded", "Site is overloaded"},
}

// statusIn returns the HTTP status text names, 0 if none: after one of
// statusPrefixes, or before its reason phrase ("503 Service Unavailable",
// "ERROR 503: Service Unavailable.", "429 Client Error: Too Many
// Requests"). With leading, a message that starts with a status is one
// too, as aiohttp's "429, message='Too Many Requests'" and google-genai's
// "429 RESOURCE_EXHAUSTED." are; only an exception that carries a status
// is read that way, since a free line starting with a number is a count.
func statusIn(text string, leading bool) int {
	if leading {
		if s, ok := statusAt(text, 0); ok && (len(text) == 3 || strings.IndexByte(" ,.:", text[3]) >= 0) {
			return s
		}
	}
	for _, p := range statusPrefixes {
		for from := 0; ; {
			i := indexFold(text[from:], p, false)
			if i < 0 {
				break
			}
			at := from + i + len(p)
			if s, ok := statusAt(text, at); ok && (at+3 == len(text) || !isWordByte(text[at+3])) {
				return s
			}
			from = at
		}
	}
	for i := 0; i+3 <= len(text); i++ {
		s, ok := statusAt(text, i)
		if !ok || (i > 0 && (isWordByte(text[i-1]) || text[i-1] == '.')) {
			continue
		}
		rest := text[i+3:]
		rest = strings.TrimPrefix(rest, ":")
		if len(rest) == 0 || rest[0] != ' ' {
			continue
		}
		rest = rest[1:]
		if hasPhrase(rest, reasonPhrases[s]) || hasPhrase(rest, clientServerError[:]) {
			return s
		}
	}
	return 0
}

// clientServerError follow a status in requests' HTTPError: "429 Client
// Error: Too Many Requests for url: …".
var clientServerError = [...]string{"Client Error", "Server Error"}

// hasPhrase reports whether text starts with one of phrases, ignoring
// case, as a whole word.
func hasPhrase(text string, phrases []string) bool {
	for _, ph := range phrases {
		if len(text) >= len(ph) && equalFoldASCII(text[:len(ph)], ph) && (len(text) == len(ph) || !isWordByte(text[len(ph)])) {
			return true
		}
	}
	return false
}

// statusAt reads the three digits at text[i:] as an HTTP status (100-599)
// that no digit follows.
func statusAt(text string, i int) (int, bool) {
	if i+3 > len(text) {
		return 0, false
	}
	n := 0
	for _, c := range []byte(text[i : i+3]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n < 100 || n > 599 || (i+3 < len(text) && '0' <= text[i+3] && text[i+3] <= '9') {
		return 0, false
	}
	return n, true
}

// providerCodeKeys are the keys of a provider's error body that carry its
// code, in the order that decides: Anthropic's details.error_code, then
// OpenAI's code, then the type both send.
var providerCodeKeys = [...]string{"error_code", "code", "type"}

// providerCodeIn returns the provider error code in an error body printed
// into text, as the SDKs print it (a Python dict: {'error': {'code':
// 'insufficient_quota', ...}}) or as JSON: the first quoted string value
// of error_code, else of code, else of type, skipping Anthropic's outer
// "type": "error". OpenAI 0.x printed no body, only its message: "You
// exceeded your current quota" is insufficient_quota.
func providerCodeIn(text string) string {
	for _, key := range providerCodeKeys {
		for _, q := range [...]string{"'", `"`} {
			quoted := q + key + q
			for from := 0; ; {
				i := strings.Index(text[from:], quoted)
				if i < 0 {
					break
				}
				from += i + len(quoted)
				if v, ok := quotedValue(text[from:], q[0]); ok && v != "" && v != "error" {
					return v
				}
			}
		}
	}
	if indexFold(text, "exceeded your current quota", false) >= 0 {
		return "insufficient_quota"
	}
	return ""
}

// quotedValue reads `: 'value'` (any spaces around the colon) at the start
// of rest, quoted with q; ok is false when rest does not start so.
func quotedValue(rest string, q byte) (string, bool) {
	rest = strings.TrimLeft(rest, " ")
	if !strings.HasPrefix(rest, ":") {
		return "", false
	}
	rest = strings.TrimLeft(rest[1:], " ")
	if rest == "" || rest[0] != q {
		return "", false
	}
	end := strings.IndexByte(rest[1:], q)
	if end < 0 {
		return "", false
	}
	return rest[1 : 1+end], true
}
