package heal

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"unicode"

	"github.com/tenaxhq/tenax/internal/lazyregexp"
)

// Placeholders that Normalize puts in place of the variable parts of a
// message. They are stable: a fingerprint computed today matches one
// computed by a later version as long as these and the rules do not change.
const (
	PlaceholderURL      = "<url>"
	PlaceholderEmail    = "<email>"
	PlaceholderUUID     = "<uuid>"
	PlaceholderDate     = "<date>"
	PlaceholderIP       = "<ip>"
	PlaceholderPath     = "<path>"
	PlaceholderHostname = "<hostname>"
	PlaceholderHex      = "<hex>"
	// PlaceholderID stands for a provider's request or object id
	// (req_8a7…, chatcmpl-AbC12…, msg_01…): a prefix, then 8 or more
	// letters and digits with at least one digit.
	PlaceholderID       = "<id>"
	PlaceholderHash     = "<hash>"
	PlaceholderDuration = "<duration>"
	PlaceholderVersion  = "<version>"
	PlaceholderFloat    = "<float>"
	PlaceholderInt      = "<int>"
	PlaceholderValue    = "<value>"
	PlaceholderQuoted   = "<quoted>"
	// PlaceholderLine stands for a line or column number after a path.
	PlaceholderLine = "<n>"
)

// Fingerprint identifies an error for the heal loop: the first 16 hex
// characters of SHA-256 over name, a zero byte, and Normalize(msg). Two
// occurrences of the same error that differ only in numbers, ids, paths,
// timestamps or quoted values share a fingerprint; name (a test name, a
// file, a validator) keeps equal messages of different checks apart.
func Fingerprint(name, msg string) string {
	return fingerprintNormalized(name, Normalize(msg))
}

func fingerprintNormalized(name, normalized string) string {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write([]byte(normalized))
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:8])
}

// Normalize reduces an error message to its invariant part, so that two
// occurrences of one error compare equal. It is deterministic and
// idempotent: Normalize(Normalize(m)) == Normalize(m).
//
// It keeps the first two non-empty lines of msg, removes ANSI escape
// sequences, folds every run of white space into one space, and then
// replaces, in this order (the first rule to claim a piece of text wins):
//
//	scheme://…                          <url>
//	user@host.tld                       <email>
//	8-4-4-4-12 hex                      <uuid>
//	2024-01-02T15:04:05Z, RFC 1123,
//	  ANSI C dates, 15:04:05            <date>
//	IPv6 (with a digit), IPv4           <ip>
//	/abs/path, ./rel, C:\win, a/b.go,
//	  a/b/c, x.go:12 (see below)        <path>, line:col → :<n>:<n>, (l,c) → (<n>,<n>)
//	host.example.com (known TLDs)       <hostname>
//	0x1f                                <hex>
//	req_8a7f…, chatcmpl-AbC123…, msg_01… <id>
//	hex runs of 7+ with a digit and a
//	  letter, one case (git, md5, sha)  <hash>
//	1.5s, 300ms, 2m3s                   <duration>
//	1.2.3, v1.2.3-rc1                   <version>
//	3.14, 1e-9                          <float>
//	42                                  <int>
//	-1, +2.5 (a sign not after a word)  <int>, <float>
//	key='v', key="v"                    key=<value>
//	'x', "x"                            <quoted>
//
// A relative path needs two slashes, an extension, or a :line suffix, so
// "and/or" and "input/output" stay words; a bare file name needs both an
// extension and a :line suffix. Numbers inside identifiers (utf8, v2,
// x86_64) are kept: rules match whole words only. A quote opens only
// after a non-word character and closes before one, so apostrophes in
// "can't" or "users'" do not start a quoted value; backquoted text is kept
// because it usually names code. Quoted values are replaced last, so what
// a quote holds never matters.
func Normalize(msg string) string {
	s := foldFirstLines(msg)
	for i := range normalizeRules {
		s = normalizeRules[i].apply(s)
	}
	return replaceQuoted(s)
}

// foldFirstLines returns the first two non-empty lines of msg joined by a
// space, with ANSI escapes removed and white space folded.
func foldFirstLines(msg string) string {
	if strings.IndexByte(msg, 0x1b) >= 0 {
		// Removing a sequence can join a stray ESC to what follows it, so
		// the strays go too, and the result has no ESC left to match.
		msg = strings.ReplaceAll(ansiEscape().ReplaceAllString(msg, ""), "\x1b", "")
	}
	var b strings.Builder
	b.Grow(min(len(msg), 512))
	lines := 0
	for line := range strings.Lines(msg) {
		if lines == 2 {
			break
		}
		wrote := false
		for _, f := range strings.FieldsFunc(line, unicode.IsSpace) {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(f)
			wrote = true
		}
		if wrote {
			lines++
		}
	}
	return b.String()
}

var ansiEscape = lazyregexp.New(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]`)

// rule replaces each accepted match of re. The replaced span is the
// submatch group; text of the match outside it (a boundary character that
// RE2, having no lookaround, must consume) is written back unchanged.
type rule struct {
	re func() *regexp.Regexp
	// need lists bytes of which s must contain one for the rule to match;
	// it skips the regex cheaply. "" means always run.
	need        string
	group       int
	placeholder string
	// accept, when set, decides whether a match is replaced. It sees the
	// whole string, so it can look at the bytes after the match.
	accept func(s string, m []int) bool
	// write, when set, writes the whole replacement of an accepted match.
	write func(b *strings.Builder, s string, m []int)
}

func (r *rule) apply(s string) string {
	if r.need != "" && !strings.ContainsAny(s, r.need) {
		return s
	}
	var ms [][]int
	if r.group == 0 && r.write == nil {
		// Without submatches the regexp engine does less work.
		ms = r.re().FindAllStringIndex(s, -1)
	} else {
		ms = r.re().FindAllStringSubmatchIndex(s, -1)
	}
	if ms == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		if r.accept != nil && !r.accept(s, m) {
			continue
		}
		if b.Cap() == 0 {
			b.Grow(len(s) + 16)
		}
		if r.write != nil {
			b.WriteString(s[last:m[0]])
			r.write(&b, s, m)
			last = m[1]
			continue
		}
		start, end := m[2*r.group], m[2*r.group+1]
		b.WriteString(s[last:start])
		b.WriteString(r.placeholder)
		last = end
	}
	if b.Cap() == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

const digits = "0123456789"

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// blocks reports whether c, next to a match, keeps it from being a token
// of its own: a word byte, or the edge of a placeholder. Placeholders
// count as words because they stand for one: a match rejected for touching
// "0" must still be rejected when a later pass sees "<int>" there, or
// Normalize would not be idempotent.
func blocks(c byte) bool {
	return isWordByte(c) || c == '<' || c == '>'
}

// before and after return the byte just outside a match, 0 at the ends.
func before(s string, i int) byte {
	if i <= 0 {
		return 0
	}
	return s[i-1]
}

func after(s string, i int) byte {
	if i >= len(s) {
		return 0
	}
	return s[i]
}

// notFollowedBy accepts a match unless the byte after it is a word byte or
// one of extra.
func notFollowedBy(extra string) func(s string, m []int) bool {
	return func(s string, m []int) bool {
		c := after(s, m[1])
		return c == 0 || !blocks(c) && strings.IndexByte(extra, c) < 0
	}
}

const (
	monthNames = `(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)`
	dayNames   = `(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)`
	hex4       = `[0-9A-Fa-f]{1,4}`
	pathChars  = `[\w.\-@+~%]`
	// lineSuffix is :line, :line:col, or (line) and (line,col) as C# and
	// tsc print them.
	lineSuffix = `(?::\d+){1,2}|\(\d+(?:,\d+)?\)`
)

// hostTLDs are the endings that make a dotted word a hostname. The list is
// short on purpose: "os.path" or "json.decoder" must stay code.
var hostTLDs = []string{"com", "net", "org", "io", "dev", "ai", "app", "co", "edu", "gov", "info", "biz", "cloud", "local", "internal", "localdomain", "us", "uk", "eu"}

var normalizeRules = []rule{
	{ // URL: a scheme, then anything up to white space or a quote; it does
		// not end on sentence punctuation.
		re:          lazyregexp.New(`\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'<>` + "`" + `]*[^\s"'<>` + "`" + `.,;:!?)\]}]`),
		need:        ":",
		placeholder: PlaceholderURL,
	},
	{
		re:          lazyregexp.New(`\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b`),
		need:        "@",
		placeholder: PlaceholderEmail,
	},
	{
		re:          lazyregexp.New(`\b[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\b`),
		need:        "-",
		placeholder: PlaceholderUUID,
	},
	{ // ISO 8601 and RFC 3339 dates and timestamps, Go's time.Time.String.
		re:          lazyregexp.New(`\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?: ?(?:Z|[+-]\d{2}:?\d{2}))?)?\b`),
		need:        "-",
		placeholder: PlaceholderDate,
	},
	{ // RFC 1123 and RFC 1123Z.
		re:          lazyregexp.New(`\b` + dayNames + `, \d{1,2} ` + monthNames + ` \d{4} \d{2}:\d{2}:\d{2} (?:[A-Z]{1,5}|[+-]\d{4})\b`),
		need:        ",",
		placeholder: PlaceholderDate,
	},
	{ // ANSI C and Unix date: Mon Jan 2 15:04:05 [MST] 2006.
		re:          lazyregexp.New(`\b` + dayNames + ` ` + monthNames + ` \d{1,2} \d{2}:\d{2}:\d{2}(?: [A-Z]{1,5})? \d{4}\b`),
		need:        ":",
		placeholder: PlaceholderDate,
	},
	{ // A time of day on its own.
		re:          lazyregexp.New(`\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b`),
		need:        ":",
		placeholder: PlaceholderDate,
	},
	{ // IPv6: the full form or one with "::". It must hold a digit and stand
		// apart from words, colons and dots, so C++'s a::b stays code.
		re:          lazyregexp.New(`(?:` + hex4 + `:){7}` + hex4 + `|(?:` + hex4 + `(?::` + hex4 + `){0,6})?::(?:` + hex4 + `(?::` + hex4 + `){0,6})?`),
		need:        ":",
		placeholder: PlaceholderIP,
		accept: func(s string, m []int) bool {
			p, n := before(s, m[0]), after(s, m[1])
			if p != 0 && (blocks(p) || p == ':' || p == '.') || n != 0 && (blocks(n) || n == ':' || n == '.') {
				return false
			}
			return strings.ContainsAny(s[m[0]:m[1]], digits)
		},
	},
	{
		re:          lazyregexp.New(`\b(?:\d{1,3}\.){3}\d{1,3}\b`),
		need:        ".",
		placeholder: PlaceholderIP,
		accept:      notFollowedBy("."),
	},
	{ // Paths. Group 1 is the boundary before the path; groups 2 and 3 a
		// path that may have a line suffix; groups 4 and 5 a bare file name
		// that must have one.
		re: lazyregexp.New(`(^|[\s(\[{"'=,;:])(?:(` +
			`[A-Za-z]:[\\/][^\s:*?"'<>|()\[\],;]*` + // C:\dir\file
			`|(?:~|\.{1,2})?/` + pathChars + `+(?:/` + pathChars + `+)*/?` + // /abs, ./rel, ~/x
			`|` + pathChars + `+(?:/` + pathChars + `+)+/?` + // rel/dir/file
			`)(` + lineSuffix + `)?|(` + pathChars + `+)(` + lineSuffix + `))`),
		need:   `/\.`,
		accept: acceptPath,
		write:  writePath,
	},
	{
		re:          lazyregexp.New(`\b(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+(?i:` + strings.Join(hostTLDs, "|") + `)\b`),
		need:        ".",
		placeholder: PlaceholderHostname,
		accept:      notFollowedBy(""),
	},
	{
		re:          lazyregexp.New(`\b0[xX][0-9A-Fa-f]+\b`),
		need:        "xX",
		placeholder: PlaceholderHex,
	},
	{ // Request and object ids: every response has its own, so an error
		// that quotes one would otherwise get a fingerprint per request.
		re:          lazyregexp.New(`\b[a-z]{2,12}[_-][A-Za-z0-9]{8,}\b`),
		need:        digits,
		placeholder: PlaceholderID,
		accept: func(s string, m []int) bool {
			return strings.ContainsAny(s[m[0]:m[1]], "0123456789")
		},
	},
	{ // Hashes: git SHAs (short and long), MD5, SHA-1, SHA-256. A run of
		// hex letters alone ("deadbeef", "facade") is a word, digits alone a
		// number, and MixedCase an identifier.
		re:          lazyregexp.New(`\b[0-9A-Fa-f]{7,}\b`),
		need:        digits,
		placeholder: PlaceholderHash,
		accept: func(s string, m []int) bool {
			var digit, lower, upper bool
			for _, c := range []byte(s[m[0]:m[1]]) {
				switch {
				case c >= '0' && c <= '9':
					digit = true
				case c >= 'a':
					lower = true
				default:
					upper = true
				}
			}
			return digit && lower != upper
		},
	},
	{
		re:          lazyregexp.New(`\b(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+\b`),
		need:        digits,
		placeholder: PlaceholderDuration,
	},
	{ // Versions: three or more dotted numbers, v-prefixed or not, with a
		// pre-release suffix. Group 1 is the boundary.
		re:          lazyregexp.New(`(^|[^\w.])(v?\d+(?:\.\d+){2,}(?:-[0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?)`),
		need:        ".",
		group:       2,
		placeholder: PlaceholderVersion,
		accept:      notFollowedBy("."),
	},
	{
		re:          lazyregexp.New(`\b(?:\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)\b`),
		need:        digits,
		placeholder: PlaceholderFloat,
	},
	{
		re:          lazyregexp.New(`\b\d+\b`),
		need:        digits,
		placeholder: PlaceholderInt,
	},
	{ // A sign belongs to its number: an assertion whose value went from
		// -1 to 1 is still the same error. A sign after a word or a closing
		// bracket is an operator ("x-1", "f(a) - 1"), and stays.
		re:   lazyregexp.New(`[-+]<(?:int|float|hex)>`),
		need: "-+",
		accept: func(s string, m []int) bool {
			c := before(s, m[0])
			return c == 0 || !blocks(c) && c != ')' && c != ']'
		},
		write: func(b *strings.Builder, s string, m []int) { b.WriteString(s[m[0]+1 : m[1]]) },
	},
}

// acceptPath keeps only what is clearly a path: a Windows or rooted path,
// or a relative one with two slashes, an extension, or a line suffix; a
// bare name with an extension that is not a hostname's, and a line suffix.
func acceptPath(s string, m []int) bool {
	if m[4] >= 0 {
		p := s[m[4]:m[5]]
		switch {
		case len(p) >= 2 && p[1] == ':', p[0] == '/', p[0] == '~', p[0] == '.' && strings.Contains(p[:min(len(p), 3)], "/"):
			return true
		}
		slashes := strings.Count(strings.TrimSuffix(p, "/"), "/")
		return slashes >= 2 || m[6] >= 0 || hasExtension(p)
	}
	p := s[m[8]:m[9]]
	return hasExtension(p) && !isHostTLD(p[strings.LastIndexByte(p, '.')+1:])
}

// hasExtension reports whether the last element of p ends in a dot and a
// short alphanumeric extension that starts with a letter.
func hasExtension(p string) bool {
	p = p[strings.LastIndexByte(p, '/')+1:]
	dot := strings.LastIndexByte(p, '.')
	if dot <= 0 || dot == len(p)-1 || len(p)-dot-1 > 10 {
		return false
	}
	ext := p[dot+1:]
	if c := ext[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return false
	}
	for i := 0; i < len(ext); i++ {
		if !isWordByte(ext[i]) {
			return false
		}
	}
	return true
}

func isHostTLD(ext string) bool {
	for _, t := range hostTLDs {
		if strings.EqualFold(ext, t) {
			return true
		}
	}
	return false
}

// writePath writes the boundary, <path>, any sentence dots the path ended
// with, and the line suffix with its numbers replaced.
func writePath(b *strings.Builder, s string, m []int) {
	b.WriteString(s[m[2]:m[3]])
	pathStart, pathEnd, sufStart, sufEnd := m[4], m[5], m[6], m[7]
	if pathStart < 0 {
		pathStart, pathEnd, sufStart, sufEnd = m[8], m[9], m[10], m[11]
	}
	p := s[pathStart:pathEnd]
	b.WriteString(PlaceholderPath)
	if sufStart < 0 {
		// A path at the end of a sentence keeps the sentence's period.
		trimmed := strings.TrimRight(p, ".")
		if trimmed != "" && trimmed[len(trimmed)-1] != '/' {
			b.WriteString(p[len(trimmed):])
		}
		return
	}
	suffix := s[sufStart:sufEnd]
	inNumber := false
	for i := 0; i < len(suffix); i++ {
		c := suffix[i]
		if c >= '0' && c <= '9' {
			if !inNumber {
				b.WriteString(PlaceholderLine)
			}
			inNumber = true
			continue
		}
		inNumber = false
		b.WriteByte(c)
	}
}

// replaceQuoted replaces quoted values: key='v' and key="v" by
// key=<value>, other quoted strings by <quoted>. A quote opens at the
// start or after a non-word byte and closes at the first matching quote
// followed by a non-word byte or the end; a backslash escapes the next
// byte. An unclosed quote is left as it is.
func replaceQuoted(s string) string {
	if !strings.ContainsAny(s, `'"`) {
		return s
	}
	var b strings.Builder
	last := 0
	// Once a quote has no closing match, no later one of its kind has
	// either: remembering that keeps many stray quotes linear.
	var unclosed [2]bool
	for i := 0; i < len(s); i++ {
		q := s[i]
		if q != '\'' && q != '"' || isWordByte(before(s, i)) {
			continue
		}
		kind := 0
		if q == '"' {
			kind = 1
		}
		if unclosed[kind] {
			continue
		}
		end := closingQuote(s, i+1, q)
		if end < 0 {
			unclosed[kind] = true
			continue
		}
		placeholder := PlaceholderQuoted
		if k := strings.TrimRight(s[:i], " "); strings.HasSuffix(k, "=") {
			placeholder = PlaceholderValue
		}
		if b.Cap() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:i])
		b.WriteString(placeholder)
		last = end + 1
		i = end
	}
	if b.Cap() == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func closingQuote(s string, from int, q byte) int {
	for k := from; k < len(s); k++ {
		switch s[k] {
		case '\\':
			k++
		case q:
			if !isWordByte(after(s, k+1)) {
				return k
			}
		}
	}
	return -1
}
