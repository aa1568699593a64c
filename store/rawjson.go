package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// A raw field (input, output, tracked_errors) comes from a task and may be
// invalid or indented JSON; the log must hold one compact line per record,
// so appendRaw checks and compacts it. json.Valid's byte-by-byte state
// machine and a byte-by-byte copy were most of what writing or exporting
// a record cost. scanJSON checks a value in straight-line code instead —
// strings skipped with IndexByte and checked for control bytes a word at
// a time, as store/jsonl's fastLine does — and notes whether it has blank
// space between its tokens: nearly every raw field is compact already
// (encoding/json wrote it), and appendRaw then copies it whole; one with
// blank space (Python's json.dumps, an indented input) is compacted with
// its strings copied whole. What scanJSON is not sure of
// (nesting past maxCompactDepth, invalid JSON) goes to json.Valid, which
// gives the answer. FuzzAppendRaw holds appendRaw to json.Valid and
// json.Compact.

// maxCompactDepth bounds the nesting scanJSON follows; deeper values
// are left to json.Valid (which takes up to 10000).
const maxCompactDepth = 64

// appendRaw appends raw compacted, or null when it is empty, as
// encoding/json does for a json.RawMessage (without its HTML escaping).
func appendRaw(b []byte, field string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return append(b, "null"...), nil
	}
	valid, blank := scanJSON(raw)
	if valid && !blank {
		return append(b, raw...), nil
	}
	if !valid && !json.Valid(raw) {
		return b, fmt.Errorf("%s %w", field, errInvalidRaw)
	}
	return appendCompacted(b, raw), nil
}

// appendCompacted appends the valid JSON raw without the blank space
// between its tokens, as json.Compact does: each string copied whole,
// found as scanJSON finds it.
func appendCompacted(b []byte, raw []byte) []byte {
	s := compactScan{b: raw, slash: indexFrom(raw, 0, '\\')}
	for i := 0; i < len(raw); {
		switch c := raw[i]; c {
		case ' ', '\t', '\n', '\r':
			i++
		case '"':
			end, ok := s.strEnd(i + 1)
			if !ok {
				// Not for valid JSON; the byte-by-byte walk is sure.
				return appendCompactedBytes(b, raw[i:])
			}
			b = append(b, raw[i:end+1]...)
			i = end + 1
		default:
			b = append(b, c)
			i++
		}
	}
	return b
}

// appendCompactedBytes is appendCompacted a byte at a time.
func appendCompactedBytes(b []byte, raw []byte) []byte {
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		b = append(b, c)
	}
	return b
}

// scanJSON reports whether raw is one valid JSON value, and whether it
// has blank space between its tokens (which json.Compact would take out).
// valid false means only that it is not sure.
func scanJSON(raw []byte) (valid, blank bool) {
	s := compactScan{b: raw, slash: indexFrom(raw, 0, '\\')}
	end, ok := s.value(0, 0)
	return ok && s.space(end) == len(raw), s.blank
}

// compactScan is scanJSON's walk over b.
type compactScan struct {
	b []byte
	// slash is the first backslash at or after the scan (len(b) for
	// none): a string that ends before it has no escape, so most strings
	// need one search, for their closing quote. Outside a string a
	// backslash is invalid, so the scan never passes one unseen.
	slash int
	// blank is whether the scan passed blank space between tokens.
	blank bool
}

// space returns the index of the first byte at or after i that is not
// blank space between tokens, noting in s.blank whether there was any.
func (s *compactScan) space(i int) int {
	start := i
	for i < len(s.b) && (s.b[i] == ' ' || s.b[i] == '\t' || s.b[i] == '\n' || s.b[i] == '\r') {
		i++
	}
	s.blank = s.blank || i > start
	return i
}

// value reads a value from b[i:], at nesting depth, and returns where it
// ends.
func (s *compactScan) value(i, depth int) (int, bool) {
	b := s.b
	i = s.space(i)
	if i >= len(b) || depth > maxCompactDepth {
		return 0, false
	}
	switch c := b[i]; c {
	case '"':
		return s.str(i + 1)
	case '{':
		return s.object(i+1, depth)
	case '[':
		return s.array(i+1, depth)
	case 't':
		return literal(b, i, "true")
	case 'f':
		return literal(b, i, "false")
	case 'n':
		return literal(b, i, "null")
	}
	return jsonNumber(b, i)
}

// object reads the rest of an object from b[i:], just past its '{', to
// just past its '}'.
func (s *compactScan) object(i, depth int) (int, bool) {
	b := s.b
	if i = s.space(i); i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i = s.space(i); i >= len(b) || b[i] != '"' {
			return 0, false
		}
		end, ok := s.str(i + 1)
		if end = s.space(end); !ok || end >= len(b) || b[end] != ':' {
			return 0, false
		}
		if i, ok = s.value(end+1, depth+1); !ok {
			return 0, false
		}
		if i = s.space(i); i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case '}':
			return i + 1, true
		case ',':
			i++
		default:
			return 0, false
		}
	}
}

// array reads the rest of an array from b[i:], just past its '[', to
// just past its ']'.
func (s *compactScan) array(i, depth int) (int, bool) {
	b := s.b
	if i = s.space(i); i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = s.value(i, depth+1); !ok {
			return 0, false
		}
		if i = s.space(i); i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ']':
			return i + 1, true
		case ',':
			i++
		default:
			return 0, false
		}
	}
}

// str reads the rest of a string whose bytes start at b[i] and returns
// the index just past its closing '"'; ok is false when it does not end,
// or holds a control byte or an escape JSON has not.
func (s *compactScan) str(i int) (int, bool) {
	end, ok := s.strEnd(i)
	if !ok || hasControl(s.b[i:end]) {
		return 0, false
	}
	return end + 1, true
}

// strEnd returns the index of the '"' that closes the string whose bytes
// start at b[i]; ok is false when it does not end or holds an escape JSON
// has not.
func (s *compactScan) strEnd(i int) (int, bool) {
	b := s.b
	quote := -1 // the first '"' at or after i, once searched
	for {
		if quote < i {
			k := bytes.IndexByte(b[i:], '"')
			if k < 0 {
				return 0, false
			}
			quote = i + k
		}
		if s.slash < i {
			s.slash = indexFrom(b, i, '\\')
		}
		if s.slash > quote {
			return quote, true
		}
		n := escapeLen(b, s.slash)
		if n == 0 {
			return 0, false
		}
		i = s.slash + n
		s.slash = indexFrom(b, i, '\\')
	}
}

// escapeLen is the length of the escape at b[j], a backslash; 0 when it
// is not one JSON has.
func escapeLen(b []byte, j int) int {
	if j+1 >= len(b) {
		return 0
	}
	switch b[j+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if j+6 <= len(b) && isHex(b[j+2]) && isHex(b[j+3]) && isHex(b[j+4]) && isHex(b[j+5]) {
			return 6
		}
	}
	return 0
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// literal reads the literal word from b[i:].
func literal(b []byte, i int, word string) (int, bool) {
	if !bytes.HasPrefix(b[i:], []byte(word)) {
		return 0, false
	}
	return i + len(word), true
}

// jsonNumber reads a JSON number from b[i:]: -?(0|[1-9][0-9]*)(.[0-9]+)?
// ([eE][+-]?[0-9]+)?, however large (json.Valid takes 1e400 too).
func jsonNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digitsFrom(b, i+1)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		frac := i + 1
		if i = digitsFrom(b, frac); i == frac {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		exp := i
		if i = digitsFrom(b, exp); i == exp {
			return 0, false
		}
	}
	return i, true
}

// digitsFrom returns the index of the first byte at or after i of b that
// is not a decimal digit.
func digitsFrom(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// indexFrom is the index of the first c at or after i of b, len(b) for
// none.
func indexFrom(b []byte, i int, c byte) int {
	if k := bytes.IndexByte(b[i:], c); k >= 0 {
		return i + k
	}
	return len(b)
}

// hasControl reports whether b holds a byte below 0x20, eight bytes at a
// time: a word has one when (x - 0x20×0x01…) & ^x & 0x80… is not zero
// (as store/jsonl's firstControlSWAR).
func hasControl(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+32 <= len(b); i += 32 {
		x0 := binary.LittleEndian.Uint64(b[i:])
		x1 := binary.LittleEndian.Uint64(b[i+8:])
		x2 := binary.LittleEndian.Uint64(b[i+16:])
		x3 := binary.LittleEndian.Uint64(b[i+24:])
		if ((x0-ones*0x20)&^x0|(x1-ones*0x20)&^x1|(x2-ones*0x20)&^x2|(x3-ones*0x20)&^x3)&highs != 0 {
			return true
		}
	}
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if (x-ones*0x20)&^x&highs != 0 {
			return true
		}
	}
	for ; i < len(b); i++ {
		if b[i] < 0x20 {
			return true
		}
	}
	return false
}
