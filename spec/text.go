package spec

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxBytes is the largest spec Load and Parse accept: 1 MiB. Real specs
// are a few KiB even with long prompts; large data belongs in the input
// file. The limit also keeps the YAML parser, which is slow on very large
// documents, from hanging the command.
const MaxBytes = 1 << 20

// maxTokens bounds the YAML tokens (keys, values, list entries,
// punctuation; comments aside) a spec may hold, counted before parsing:
// the YAML parser's time grows with the square of a mapping's keys, a
// list's nesting and some malformed lines, so a sub-MiB spec could
// otherwise take minutes. 10,000 is about 3,000 keys, far beyond any real
// spec, and the worst shapes under it parse in well under a second.
const maxTokens = 10_000

// maxQuoted is how many characters of a value an error message quotes.
const maxQuoted = 40

// binarySample is how much of a spec the binary-data check looks at.
const binarySample = 8 << 10

// tooLarge is the message for a spec of size bytes.
func tooLarge(name string, size int64) string {
	return fmt.Sprintf("%s is %s; a spec may be at most 1 MiB (put large data in the input file)", name, formatSize(size))
}

// formatSize writes a byte count as "2.0 GiB", "10.0 MiB", "12.5 KiB" or
// "300 bytes";
// sizes that would round to exactly 1.0 MiB keep their byte count, so that
// a file just over the limit does not read as "1.0 MiB".
func formatSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20 && fmt.Sprintf("%.1f", float64(n)/(1<<20)) != "1.0":
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// checkText refuses what is not YAML text before the parser sees it: a
// file over MaxBytes, binary data, UTF-16 or UTF-32 text, bytes that are
// not UTF-8, and control characters YAML does not allow. Each problem is
// reported once, at the first offending byte.
func (d *decoder) checkText(data []byte) bool {
	if len(data) > MaxBytes {
		d.errorf(pos{1, 1}, "", "%s", tooLarge("the spec", int64(len(data))))
		return false
	}
	if enc := wideEncoding(data); enc != "" {
		d.errorf(pos{1, 1}, "", "the spec is %s text; save it as UTF-8", enc)
		return false
	}
	if isBinary(data) {
		d.errorf(pos{1, 1}, "", "not a YAML spec: the file holds binary data")
		return false
	}
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			d.errorf(pos{line, col}, "", "the spec is not valid UTF-8 (save it as UTF-8)")
			return false
		case r == '\n':
			line, col = line+1, 0
		case !allowedRune(r):
			d.errorf(pos{line, col}, "", "the spec holds the control character %U, which YAML does not allow; remove it", r)
			return false
		}
		i += size
		col++
	}
	return true
}

// allowedRune reports whether YAML allows r in a document: tab, line
// breaks and printable characters (YAML 1.2, c-printable).
func allowedRune(r rune) bool {
	switch {
	case r == '\t' || r == '\r' || r == '\n' || r == 0x85:
		return true
	case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
		return false
	case r == 0xfffe || r == 0xffff:
		return false
	}
	return true
}

// wideEncoding names the encoding a byte order mark announces, when it is
// one of the UTF-16 or UTF-32 ones.
func wideEncoding(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte{0xff, 0xfe, 0, 0}), bytes.HasPrefix(data, []byte{0, 0, 0xfe, 0xff}):
		return "UTF-32"
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}), bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		return "UTF-16"
	}
	return ""
}

// isBinary reports whether data looks like a binary file rather than text:
// it holds a NUL byte, or more than one in ten of its first bytes are
// control characters other than tab and line breaks.
func isBinary(data []byte) bool {
	if bytes.IndexByte(data, 0) >= 0 {
		return true
	}
	sample := data[:min(len(data), binarySample)]
	controls := 0
	for _, c := range sample {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			controls++
		}
	}
	return controls*10 > len(sample)
}

// quote quotes a value for an error message: Go-escaped, and cut to its
// first maxQuoted characters with its size when longer, so that a stray
// block of data never floods the terminal.
func quote(s string) string {
	if utf8.RuneCountInString(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut, n := 0, 0
	for i := range s {
		if n == maxQuoted {
			cut = i
			break
		}
		n++
	}
	return fmt.Sprintf("%s… (%s in all)", strconv.Quote(s[:cut]), formatSize(int64(len(s))))
}

// quoteBare is quote without the quotation marks, for text shown inside
// other punctuation.
func quoteBare(s string) string {
	q := quote(s)
	end := strings.LastIndexByte(q, '"')
	return q[1:end] + q[end+1:]
}

// escapeControls replaces the control characters of a message (a raw tab
// in the YAML library's wording) with Go escapes.
func escapeControls(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r < 0xa0 }
