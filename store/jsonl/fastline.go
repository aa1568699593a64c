package jsonl

import "bytes"

// The fast path of the log scanner. A line tenax wrote itself is compact
// JSON that starts {"_idx":N, (store.Record.AppendJSON): fastLine reads
// such a line, whole and without its newline, in straight-line code —
// strings skipped with IndexByte, no step function per byte — and reports
// what the byte-at-a-time scanner (lineScan) would: its _idx and whether
// it failed. Whatever it is not sure of (blank space between tokens, an
// escape in a key, a second _idx, a damaged line, a scalar it does not
// know) it declines, and logReader scans the line byte by byte, which says
// exactly what is wrong. FuzzFastLine holds the two to the same answers.

// fastLine reads a complete line as lineScan does; ok is false when it
// declines.
func fastLine(line []byte) (idx int, failed, ok bool) {
	const prefix = `{"_idx":`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return 0, false, false
	}
	i := len(prefix)
	idx, i, ok = fastIdx(line, i)
	if !ok {
		return 0, false, false
	}
	for {
		if i >= len(line) {
			return 0, false, false
		}
		switch line[i] {
		case '}':
			return idx, failed, i == len(line)-1
		case ',':
		default:
			return 0, false, false
		}
		var field int
		if field, i, ok = fastKey(line, i+1); !ok {
			return 0, false, false
		}
		var f bool
		if f, i, ok = fastValue(line, i, field); !ok {
			return 0, false, false
		}
		failed = failed || f
	}
}

// fastIdx reads _idx's digits from line[i:]: a whole number of at most
// ten digits, no larger than maxIdx, ended by ',' or '}'.
func fastIdx(line []byte, i int) (idx, next int, ok bool) {
	start := i
	for ; i < len(line) && line[i] >= '0' && line[i] <= '9'; i++ {
		idx = idx*10 + int(line[i]-'0')
		if i-start >= 10 || idx > maxIdx {
			return 0, 0, false
		}
	}
	if i == start || i == len(line) || line[i] != ',' && line[i] != '}' {
		return 0, 0, false
	}
	return idx, i, true
}

// fastKey reads a key and its colon from line[i:], which must start with
// the key's '"'; it declines a key with an escape and a second _idx.
func fastKey(line []byte, i int) (field, next int, ok bool) {
	if i >= len(line) || line[i] != '"' {
		return 0, 0, false
	}
	k := bytes.IndexByte(line[i+1:], '"')
	if k < 0 {
		return 0, 0, false
	}
	key := line[i+1 : i+1+k]
	next = i + 1 + k + 1
	if bytes.IndexByte(key, '\\') >= 0 || next >= len(line) || line[next] != ':' {
		return 0, 0, false
	}
	switch string(key) {
	case "_idx":
		return 0, 0, false
	case "error":
		field = fieldError
	case "class":
		field = fieldClass
	default:
		field = fieldOther
	}
	return field, next + 1, true
}

// fastValue reads a top-level value from line[i:] and reports whether it
// makes the record failed, as lineScan.str does for error and class.
func fastValue(line []byte, i, field int) (failed bool, next int, ok bool) {
	if i >= len(line) {
		return false, 0, false
	}
	switch c := line[i]; {
	case c == '"':
		end, ok := stringEnd(line, i+1)
		if !ok {
			return false, 0, false
		}
		v := line[i+1 : end]
		if field == fieldClass && bytes.IndexByte(v, '\\') >= 0 {
			// lineScan compares only the unescaped bytes it kept of
			// class; an escape there is not worth matching it on.
			return false, 0, false
		}
		switch field {
		case fieldError:
			failed = len(v) > 0
		case fieldClass:
			failed = len(v) > 0 && string(v) != "unknown"
		}
		return failed, end + 1, true
	case c == '{' || c == '[':
		next, ok = nestedEnd(line, i)
		return false, next, ok
	default:
		// An empty scalar is declined: lineScan would read the ',' or
		// '}' after the colon as the scalar's first byte.
		start := i
		for ; i < len(line) && isScalarByte(line[i]); i++ {
		}
		return false, i, i > start && i < len(line) && (line[i] == ',' || line[i] == '}')
	}
}

// isScalarByte reports whether c may be part of a number or a literal.
func isScalarByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '+' || c == '.' || c == 'E'
}

// stringEnd returns the index of the '"' that closes the string whose
// bytes start at line[i].
func stringEnd(line []byte, i int) (int, bool) {
	for {
		k := bytes.IndexByte(line[i:], '"')
		if k < 0 {
			return 0, false
		}
		end := i + k
		// The quote is escaped when an odd run of backslashes precedes it.
		bs := 0
		for j := end - 1; j >= i && line[j] == '\\'; j-- {
			bs++
		}
		if bs%2 == 0 {
			return end, true
		}
		i = end + 1
	}
}

// nestedEnd returns the index just past the object or array that starts
// at line[i], matching brackets as lineScan.nested does (any closing
// bracket closes any opening one) and skipping strings.
func nestedEnd(line []byte, i int) (int, bool) {
	depth := 0
	for ; i < len(line); i++ {
		switch line[i] {
		case '"':
			end, ok := stringEnd(line, i+1)
			if !ok {
				return 0, false
			}
			i = end
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}
