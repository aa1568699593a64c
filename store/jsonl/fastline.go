package jsonl

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
)

// The fast path of the log scanner. A line tenax wrote itself is compact
// JSON that starts {"_idx":N, (store.Record.AppendJSON): fastLine reads
// such a line, whole and without its newline, in straight-line code —
// strings skipped with IndexByte, no step function per byte — and reports
// its _idx and whether it failed. It accepts a line only when it can tell
// that decodeRecord, the rule every reader of the log applies (resume,
// status, export, failures.jsonl), takes it as a store.Record: valid JSON
// (no control byte, every escape, number and literal well formed, every
// nested value whole) whose fields have the kinds Record gives them.
// Whatever it is not sure of (blank space between tokens, a tab, an
// escape in a key, a second _idx, error or class, a key that differs from
// one of Record's only in case, a field it does not check such as agent,
// a damaged line) it declines, and logReader scans the line byte by byte,
// then decodes it: that says exactly what is wrong, or reads the line
// right. FuzzFastLine holds fastLine to both. The same walk, noting where
// each field's value lies, is fastDecode's (fastdecode.go): status and
// export decode a line fastLine is sure of without encoding/json.

// fieldKind is what a field's value must be for decodeRecord to take it.
type fieldKind uint8

const (
	kindAny       fieldKind = iota // any JSON value: json.RawMessage, or a key Record has not
	kindString                     // a string or null
	kindError                      // the error: a string or null, once
	kindClass                      // a class name (classify.ParseClass) or null, once
	kindBool                       // true, false or null
	kindInt                        // an integer that fits an int (32 bits on 386, arm), or null
	kindInt64                      // an integer that fits an int64, or null
	kindNumber                     // a number without an exponent, or null
	kindTime                       // an RFC 3339 time fastTime is sure of
	kindUsage                      // task.Usage
	kindTries                      // []store.Try
	kindUnchecked                  // only null: a field fastLine does not check (agent)
	kindDecline                    // never: _idx again, or a key unsure of
)

// recordKind is the kind of a top-level key of a record.
func recordKind(key []byte) fieldKind {
	switch string(key) {
	case "_idx":
		return kindDecline
	case "id", "finish_reason", "stderr", "route", "model", "fingerprint":
		return kindString
	case "input", "output", "tracked_errors":
		return kindAny
	case "error":
		return kindError
	case "class":
		return kindClass
	case "retryable", "cache_hit":
		return kindBool
	case "attempts", "heal_attempts", "generation_attempts", "rate_limited":
		return kindInt
	case "duration_ms", "call_ms":
		return kindInt64
	case "cost_usd":
		return kindNumber
	case "finished_at":
		return kindTime
	case "usage":
		return kindUsage
	case "tries":
		return kindTries
	case "agent":
		return kindUnchecked
	}
	return otherKey(key)
}

// usageKind is the kind of a key of a record's usage (task.Usage).
func usageKind(key []byte) fieldKind {
	switch string(key) {
	case "input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens", "reasoning_tokens":
		return kindInt64
	case "impossible":
		return kindString
	}
	return otherKey(key)
}

// tryKind is the kind of a key of one of a record's tries (store.Try).
func tryKind(key []byte) fieldKind {
	switch string(key) {
	case "route", "model", "error", "fallback":
		return kindString
	case "class":
		return kindClass
	case "call_ms":
		return kindInt64
	}
	return otherKey(key)
}

// otherKey is the kind of a key the struct has not. encoding/json matches
// keys regardless of case (and folds a few non-ASCII letters), so a key
// with an upper-case or non-ASCII letter may be one of the struct's.
func otherKey(key []byte) fieldKind {
	for _, c := range key {
		if c >= 'A' && c <= 'Z' || c >= 0x80 {
			return kindDecline
		}
	}
	return kindAny
}

// classNames are the names classify.ParseClass reads.
var classNames = [...]string{"", "unknown", "retryable", "fatal", "item", "invalid", "canceled"}

// maxFastDepth bounds the nesting fastLine follows; deeper is declined.
const maxFastDepth = 64

// fastLine reads a complete line as decodeRecord would; ok is false when
// it declines.
func fastLine(line []byte) (idx int, failed, ok bool) {
	if hasControl(line) {
		return 0, false, false
	}
	return fastClean(line)
}

// fastClean is fastLine for a line known to hold no control byte
// (firstControl found none before its newline).
func fastClean(line []byte) (idx int, failed, ok bool) {
	return fastScan(line, nil)
}

// fastScan is fastClean that, given spans, also notes where the value of
// each of Record's top-level fields lies in line (fastDecode's walk).
func fastScan(line []byte, spans *lineSpans) (idx int, failed, ok bool) {
	const prefix = `{"_idx":`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return 0, false, false
	}
	idx, i, ok := fastIdx(line, len(prefix))
	if !ok {
		return 0, false, false
	}
	// The first backslash of the line, kept ahead of the scan: most lines
	// have none, and a string before it holds no escape, so that each
	// string needs one search, for its closing quote.
	slash := bytes.IndexByte(line, '\\')
	if slash < 0 {
		slash = len(line)
	}
	o := fastObject{spans: spans}
	if i, ok = o.fields(line, i, recordKind, &slash); !ok || i != len(line) {
		return 0, false, false
	}
	return idx, o.failed, true
}

// fastObject is what fields read of an object.
type fastObject struct {
	failed           bool
	sawError, sawCls bool
	// spans, when not nil, is told where each field's value lies
	// (fastDecode); nested objects have none.
	spans *lineSpans
}

// fields reads the rest of an object from line[i:], just after its first
// value or its '{' (then line[i] may be '}' or '"'), to just past its '}',
// each value checked against the kind kindOf gives its key.
// slash is the first backslash at or after i (len(line) for none), kept
// so as the scan goes on.
func (o *fastObject) fields(line []byte, i int, kindOf func([]byte) fieldKind, slash *int) (int, bool) {
	first := i > 0 && line[i-1] == '{'
	for {
		if i >= len(line) {
			return 0, false
		}
		switch line[i] {
		case '}':
			return i + 1, true
		case ',':
			if first {
				return 0, false
			}
			i++
		default:
			if !first {
				return 0, false
			}
		}
		first = false
		key, next, ok := fastKey(line, i, *slash)
		if !ok {
			return 0, false
		}
		if i, ok = o.value(line, next, kindOf(key), slash); !ok {
			return 0, false
		}
		if o.spans != nil && !o.spans.note(key, next, i) {
			return 0, false
		}
	}
}

// fastKey reads a key and its colon from line[i:], which must start with
// the key's '"'; it declines a key with an escape (slash, the first
// backslash at or after i, within it).
func fastKey(line []byte, i, slash int) (key []byte, next int, ok bool) {
	if i >= len(line) || line[i] != '"' {
		return nil, 0, false
	}
	k := bytes.IndexByte(line[i+1:], '"')
	if k < 0 {
		return nil, 0, false
	}
	key = line[i+1 : i+1+k]
	next = i + 1 + k + 1
	if slash < next || next >= len(line) || line[next] != ':' {
		return nil, 0, false
	}
	return key, next + 1, true
}

// value reads a value of kind k from line[i:] and returns where it ends.
func (o *fastObject) value(line []byte, i int, k fieldKind, slash *int) (int, bool) {
	if i >= len(line) {
		return 0, false
	}
	if k != kindAny && k != kindDecline && bytes.HasPrefix(line[i:], []byte("null")) {
		// null leaves any field as it was; it still must end there.
		return i + 4, true
	}
	switch k {
	case kindAny:
		return anyValue(line, i, 0, slash)
	case kindString, kindError, kindClass, kindTime:
		return o.stringField(line, i, k, slash)
	case kindBool:
		switch {
		case bytes.HasPrefix(line[i:], []byte("true")):
			return i + 4, true
		case bytes.HasPrefix(line[i:], []byte("false")):
			return i + 5, true
		}
	case kindInt:
		return number(line, i, maxIntDigits)
	case kindInt64:
		return number(line, i, maxInt64Digits)
	case kindNumber:
		end, ok := number(line, i, 0)
		return end, ok && fitsFloat(line[i:end])
	case kindUsage:
		if line[i] == '{' {
			var u fastObject
			return u.fields(line, i+1, usageKind, slash)
		}
	case kindTries:
		return tries(line, i, slash)
	}
	return 0, false
}

// stringField reads a string value of kind k (a string, the error, a
// class or a time).
func (o *fastObject) stringField(line []byte, i int, k fieldKind, slash *int) (int, bool) {
	if line[i] != '"' {
		return 0, false
	}
	end, escaped, ok := stringEnd(line, i+1, slash)
	if !ok {
		return 0, false
	}
	v := line[i+1 : end]
	switch k {
	case kindError:
		if o.sawError {
			return 0, false // encoding/json keeps the last; not worth following
		}
		o.sawError = true
		o.failed = o.failed || len(v) > 0
	case kindClass:
		if o.sawCls || escaped || !knownClass(v) {
			return 0, false
		}
		o.sawCls = true
		o.failed = o.failed || len(v) > 0 && string(v) != "unknown"
	case kindTime:
		if escaped || !fastTime(v) {
			return 0, false
		}
	}
	return end + 1, true
}

func knownClass(v []byte) bool {
	for _, name := range classNames {
		if string(v) == name {
			return true
		}
	}
	return false
}

// tries reads a record's tries: an array of objects of store.Try.
func tries(line []byte, i int, slash *int) (int, bool) {
	if line[i] != '[' {
		return 0, false
	}
	i++
	if i < len(line) && line[i] == ']' {
		return i + 1, true
	}
	for {
		if i >= len(line) || line[i] != '{' {
			return 0, false
		}
		var t fastObject
		next, ok := t.fields(line, i+1, tryKind, slash)
		if !ok || next >= len(line) {
			return 0, false
		}
		switch line[next] {
		case ']':
			return next + 1, true
		case ',':
			i = next + 1
		default:
			return 0, false
		}
	}
}

// fastIdx reads _idx's digits from line[i:]: a whole number of at most
// ten digits without a leading zero, no larger than maxIdx, ended by ','
// or '}'.
func fastIdx(line []byte, i int) (idx, next int, ok bool) {
	start := i
	for ; i < len(line) && line[i] >= '0' && line[i] <= '9'; i++ {
		idx = idx*10 + int(line[i]-'0')
		if i-start >= 10 || idx > maxIdx {
			return 0, 0, false
		}
	}
	if i == start || i == len(line) || line[i] != ',' && line[i] != '}' || line[start] == '0' && i-start > 1 {
		return 0, 0, false
	}
	return idx, i, true
}

// The most digits of an integer that surely fits an int64, and an int:
// 18, or 9 where an int has 32 bits (386, arm), whose decoding the rule
// refuses past 2147483647.
const (
	maxInt64Digits = 18
	maxIntDigits   = 9 + 9*(strconv.IntSize/64)
)

// number reads a JSON number from line[i:]; with wholeDigits above 0,
// only an integer of at most that many digits. A number with an exponent
// is declined (it may overflow a float64).
func number(line []byte, i int, wholeDigits int) (int, bool) {
	whole := wholeDigits > 0
	if i < len(line) && line[i] == '-' {
		i++
	}
	start := i
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	digits := i - start
	if digits == 0 || line[start] == '0' && digits > 1 || whole && digits > wholeDigits {
		return 0, false
	}
	if i < len(line) && line[i] == '.' {
		if whole {
			return 0, false
		}
		i++
		frac := i
		for i < len(line) && line[i] >= '0' && line[i] <= '9' {
			i++
		}
		if i == frac {
			return 0, false
		}
	}
	if i < len(line) && (line[i] == 'e' || line[i] == 'E') {
		return 0, false
	}
	return i, true
}

// fitsFloat reports whether the number v, without an exponent, is one a
// float64 holds: at most 308 digits before its point, so below 1e308
// (ParseFloat refuses 1e309, and the rule with it; a fraction too small
// is read as 0).
func fitsFloat(v []byte) bool {
	if k := bytes.IndexByte(v, '.'); k >= 0 {
		v = v[:k]
	}
	return len(bytes.TrimPrefix(v, []byte("-"))) <= 308
}

// anyValue reads any JSON value from line[i:], compact, at nesting depth.
func anyValue(line []byte, i, depth int, slash *int) (int, bool) {
	if i >= len(line) || depth > maxFastDepth {
		return 0, false
	}
	switch c := line[i]; {
	case c == '"':
		end, _, ok := stringEnd(line, i+1, slash)
		return end + 1, ok
	case c == '{':
		i++
		if i < len(line) && line[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(line) || line[i] != '"' {
				return 0, false
			}
			end, _, ok := stringEnd(line, i+1, slash)
			if !ok || end+1 >= len(line) || line[end+1] != ':' {
				return 0, false
			}
			if i, ok = anyValue(line, end+2, depth+1, slash); !ok || i >= len(line) {
				return 0, false
			}
			switch line[i] {
			case '}':
				return i + 1, true
			case ',':
				i++
			default:
				return 0, false
			}
		}
	case c == '[':
		i++
		if i < len(line) && line[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = anyValue(line, i, depth+1, slash); !ok || i >= len(line) {
				return 0, false
			}
			switch line[i] {
			case ']':
				return i + 1, true
			case ',':
				i++
			default:
				return 0, false
			}
		}
	case bytes.HasPrefix(line[i:], []byte("true")) || bytes.HasPrefix(line[i:], []byte("null")):
		return i + 4, true
	case bytes.HasPrefix(line[i:], []byte("false")):
		return i + 5, true
	}
	return number(line, i, 0)
}

// stringEnd returns the index of the '"' that closes the string whose
// bytes start at line[i], and whether the string holds an escape; ok is
// false when the string does not end or an escape in it is not one JSON
// has. The line has no control byte (hasControl). *slash is the first
// backslash at or after i, len(line) for none: a string that ends before
// it has no escape; one that has is walked, and *slash moved past its end.
func stringEnd(line []byte, i int, slash *int) (end int, escaped, ok bool) {
	k := bytes.IndexByte(line[i:], '"')
	if k < 0 {
		return 0, false, false
	}
	if *slash < i {
		// Not ahead of the scan (it cannot be: outside a string a
		// backslash declines the line); found again all the same.
		*slash = nextIndex(line, i, -1, '\\')
	}
	if *slash >= i+k {
		return i + k, false, true
	}
	for j := *slash; j < len(line); {
		switch line[j] {
		case '"':
			*slash = nextIndex(line, j+1, -1, '\\')
			return j, true, true
		case '\\':
			if j+1 >= len(line) {
				return 0, false, false
			}
			switch line[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(line) || !isHex(line[j+2]) || !isHex(line[j+3]) || !isHex(line[j+4]) || !isHex(line[j+5]) {
					return 0, false, false
				}
				j += 6
			default:
				return 0, false, false
			}
		default:
			j++
		}
	}
	return 0, false, false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// fastTime reports whether v is a time tenax writes, as RFC 3339 with
// nanoseconds (2026-11-22T22:43:41.822814173Z or an offset), that
// time.Time's decoding takes. It declines days past the 28th rather than
// know the months.
func fastTime(v []byte) bool {
	if len(v) < len("2006-01-02T15:04:05Z") || v[4] != '-' || v[7] != '-' || v[10] != 'T' || v[13] != ':' || v[16] != ':' {
		return false
	}
	two := func(at int, lo, hi int) bool {
		a, b := v[at], v[at+1]
		if a < '0' || a > '9' || b < '0' || b > '9' {
			return false
		}
		n := int(a-'0')*10 + int(b-'0')
		return n >= lo && n <= hi
	}
	if !two(0, 0, 99) || !two(2, 0, 99) || !two(5, 1, 12) || !two(8, 1, 28) || !two(11, 0, 23) || !two(14, 0, 59) || !two(17, 0, 59) {
		return false
	}
	rest := v[19:]
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 1 || n > 10 {
			return false
		}
		rest = rest[n:]
	}
	switch {
	case len(rest) == 1 && rest[0] == 'Z':
		return true
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		v = rest // two reads v
		return two(1, 0, 23) && two(4, 0, 59)
	}
	return false
}

// firstControlSWAR is firstControl in Go alone, for the architectures
// without a vector form (firstctl_amd64.s): eight bytes at a time, a word
// has a byte below 0x20 when (x - 0x20×0x01…) & ^x & 0x80… is not zero,
// and the lowest byte that test flags is the first below 0x20 (a borrow
// only runs upwards, from a byte that is itself below 0x20).
func firstControlSWAR(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+32 <= len(b); i += 32 {
		x0 := binary.LittleEndian.Uint64(b[i:])
		x1 := binary.LittleEndian.Uint64(b[i+8:])
		x2 := binary.LittleEndian.Uint64(b[i+16:])
		x3 := binary.LittleEndian.Uint64(b[i+24:])
		if ((x0-ones*0x20)&^x0|(x1-ones*0x20)&^x1|(x2-ones*0x20)&^x2|(x3-ones*0x20)&^x3)&highs != 0 {
			break
		}
	}
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := (x - ones*0x20) &^ x & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if b[i] < 0x20 {
			return i
		}
	}
	return len(b)
}
