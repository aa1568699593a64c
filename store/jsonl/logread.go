package jsonl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
)

// CorruptError reports a line of results.jsonl that is not a record and is
// not a torn last line, so no crash of tenax explains it: the file was
// damaged or edited. Nothing is skipped silently; the error says where.
type CorruptError struct {
	Path   string
	Line   int   // 1-based line number, 0 when unknown
	Offset int64 // byte offset of the line's start
	Reason string
}

func (e *CorruptError) Error() string {
	where := fmt.Sprintf("%s at byte %d", e.Path, e.Offset)
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d (byte %d)", e.Path, e.Line, e.Offset)
	}
	return fmt.Sprintf("jsonl: %s is not a tenax record: %s; repair or remove that line, then run tenax again", where, e.Reason)
}

// lineInfo is what one pass over the log learns of a complete record line
// without decoding it.
type lineInfo struct {
	start, end int64 // the line's bytes are [start, end), its newline included
	idx        int
	failed     bool
	noNewline  bool // the file's last line, complete but unterminated
}

// maxIdx bounds _idx so a damaged number cannot make Outcomes allocate
// without limit.
const maxIdx = math.MaxInt32

// The states of logReader's scanner, one per place in a line.
const (
	stLineStart  = iota // before the line's '{', blank space allowed
	stKey               // expecting a key or '}'
	stKeyStr            // inside a key
	stColon             // after a key
	stValue             // expecting a top-level value
	stStr               // inside a top-level string value
	stScalar            // inside a top-level number or literal
	stNested            // inside a nested object or array
	stNestedStr         // inside a string in a nested value
	stAfterValue        // expecting ',' or '}'
	stLineEnd           // after the closing '}', expecting the newline
	stBad               // not a record: read on to the newline
)

// The top-level fields the scanner looks at.
const (
	fieldOther = iota
	fieldIdx
	fieldError
	fieldClass
)

// logReader scans results.jsonl line by line, reading only the top-level
// keys _idx, error and class of each record. It holds a fixed buffer, never
// a line, so its memory is the same for a record of a hundred bytes or a
// hundred megabytes.
type logReader struct {
	r      io.Reader
	path   string
	buf    []byte
	pos, n int
	base   int64 // file offset of buf[0]
	lineNo int   // newlines consumed so far
	eof    bool
	err    error // a read error, returned once the buffer is spent
	// Where the next '"', '\\' and newline are in buf, found with
	// IndexByte and kept until passed (-1: not yet searched), so a long
	// string is skipped at memchr speed and each byte is searched once
	// per kind.
	nextQuote, nextSlash, nextNL int
	// tornAt is the offset of an incomplete last line, -1 when there is
	// none; set when next returns io.EOF.
	tornAt int64
}

func newLogReader(r io.Reader, path string, base int64) *logReader {
	return newLogReaderBuf(r, path, base, make([]byte, 64<<10))
}

// newLogReaderBuf is newLogReader reading through buf, for a caller that
// reads many short stretches.
func newLogReaderBuf(r io.Reader, path string, base int64, buf []byte) *logReader {
	return &logReader{r: r, path: path, buf: buf, base: base, tornAt: -1,
		nextQuote: -1, nextSlash: -1, nextNL: -1}
}

func (lr *logReader) fill() bool {
	if lr.eof || lr.err != nil {
		return false
	}
	lr.base += int64(lr.n)
	lr.pos, lr.n = 0, 0
	lr.nextQuote, lr.nextSlash, lr.nextNL = -1, -1, -1
	for lr.n == 0 {
		n, err := lr.r.Read(lr.buf)
		lr.n = n
		if errors.Is(err, io.EOF) {
			lr.eof = true
			return n > 0
		}
		if err != nil {
			lr.err = err
			return n > 0
		}
	}
	return true
}

// next returns the next complete record line. At the end of the log it
// returns io.EOF, with tornAt set when the log ends in an incomplete line.
// A damaged line that is not the last is a *CorruptError.
func (lr *logReader) next() (lineInfo, error) {
	var (
		st              = stLineStart
		start           int64
		field           int
		key             [8]byte
		keyLen          int // -1: not a key we look at
		escaped         bool
		depth           int
		idx, idxDigits  int
		idxNeg, idxSeen bool
		valLen          int
		class           [8]byte
		failed          bool
		reason          string
		lineNo          = lr.lineNo + 1
	)
	for {
		if lr.pos == lr.n && !lr.fill() {
			if lr.err != nil {
				return lineInfo{}, fmt.Errorf("jsonl: reading %s: %w", lr.path, lr.err)
			}
			switch st {
			case stLineStart:
			case stLineEnd:
				if !idxSeen {
					lr.tornAt = start
					return lineInfo{}, io.EOF
				}
				return lineInfo{start: start, end: lr.base + int64(lr.n), idx: idx, failed: failed, noNewline: true}, nil
			default:
				lr.tornAt = start
			}
			return lineInfo{}, io.EOF
		}
		buf := lr.buf[:lr.n]
		for i := lr.pos; i < len(buf); i++ {
			if !escaped && (st == stNestedStr || st == stStr && field == fieldOther) {
				lr.nextQuote = nextIndex(buf, i, lr.nextQuote, '"')
				lr.nextSlash = nextIndex(buf, i, lr.nextSlash, '\\')
				lr.nextNL = nextIndex(buf, i, lr.nextNL, '\n')
				i = min(lr.nextQuote, lr.nextSlash, lr.nextNL)
				if i == len(buf) {
					break
				}
			}
			c := buf[i]
			if c == '\n' {
				lr.lineNo++
				switch st {
				case stLineStart:
					continue
				case stLineEnd:
					if !idxSeen {
						st, reason = stBad, "it has no _idx"
						break
					}
					lr.pos = i + 1
					return lineInfo{start: start, end: lr.base + int64(lr.pos), idx: idx, failed: failed}, nil
				case stBad:
				default:
					st, reason = stBad, "the line ends inside the JSON object"
				}
				lr.pos = i + 1
				return lineInfo{}, &CorruptError{Path: lr.path, Line: lineNo, Offset: start, Reason: reason}
			}
			switch st {
			case stLineStart:
				if c == ' ' || c == '\t' || c == '\r' {
					continue
				}
				start = lr.base + int64(i)
				lineNo = lr.lineNo + 1
				if c != '{' {
					st, reason = stBad, "it does not start with '{'"
					continue
				}
				st, depth = stKey, 1
			case stKey:
				switch c {
				case ' ', '\t', '\r':
				case '"':
					st, keyLen = stKeyStr, 0
				case '}':
					st = stLineEnd
				default:
					st, reason = stBad, "a key was expected"
				}
			case stKeyStr:
				switch {
				case escaped:
					escaped = false
				case c == '\\':
					escaped, keyLen = true, -1
				case c == '"':
					st = stColon
				case keyLen >= 0 && keyLen < len(key):
					key[keyLen] = c
					keyLen++
				default:
					keyLen = -1
				}
			case stColon:
				switch c {
				case ' ', '\t', '\r':
				case ':':
					st, field = stValue, fieldOther
					if keyLen >= 0 {
						switch string(key[:keyLen]) {
						case "_idx":
							field = fieldIdx
						case "error":
							field = fieldError
						case "class":
							field = fieldClass
						}
					}
				default:
					st, reason = stBad, "':' was expected after a key"
				}
			case stValue:
				switch {
				case c == ' ' || c == '\t' || c == '\r':
				case c == '"':
					st, valLen = stStr, 0
					if field == fieldIdx {
						st, reason = stBad, "_idx is a string"
					}
				case c == '{' || c == '[':
					st, depth = stNested, 2
					if field == fieldIdx {
						st, reason = stBad, "_idx is not a number"
					}
				case field == fieldIdx:
					st, idx, idxDigits, idxNeg = stScalar, 0, 0, false
					switch {
					case c == '-':
						idxNeg = true
					case c >= '0' && c <= '9':
						idx, idxDigits = int(c-'0'), 1
					default:
						st, reason = stBad, "_idx is not a number"
					}
				default:
					st = stScalar
				}
			case stScalar:
				if c == ',' || c == '}' || c == ' ' || c == '\t' || c == '\r' {
					if field == fieldIdx {
						switch {
						case idxDigits == 0:
							st, reason = stBad, "_idx is not a number"
						case idxNeg:
							st, reason = stBad, "_idx is negative"
						default:
							idxSeen = true
						}
						if st == stBad {
							continue
						}
					}
					st = stAfterValue
					if c == ',' {
						st = stKey
					} else if c == '}' {
						st = stLineEnd
					}
					continue
				}
				if field == fieldIdx {
					if c < '0' || c > '9' {
						st, reason = stBad, "_idx is not a whole number"
						continue
					}
					idx = idx*10 + int(c-'0')
					idxDigits++
					if idx > maxIdx {
						st, reason = stBad, fmt.Sprintf("_idx is larger than %d", maxIdx)
					}
				}
			case stStr:
				switch {
				case escaped:
					escaped = false
					valLen++
				case c == '\\':
					escaped = true
					valLen++
				case c == '"':
					st = stAfterValue
					switch field {
					case fieldError:
						failed = failed || valLen > 0
					case fieldClass:
						failed = failed || valLen > 0 && !(valLen == len("unknown") && string(class[:valLen]) == "unknown")
					}
				default:
					if field == fieldClass && valLen < len(class) {
						class[valLen] = c
					}
					valLen++
				}
			case stNested:
				switch c {
				case '"':
					st = stNestedStr
				case '{', '[':
					depth++
				case '}', ']':
					depth--
					if depth == 1 {
						st = stAfterValue
					}
				}
			case stNestedStr:
				switch {
				case escaped:
					escaped = false
				case c == '\\':
					escaped = true
				case c == '"':
					st = stNested
				}
			case stAfterValue:
				switch c {
				case ' ', '\t', '\r':
				case ',':
					st = stKey
				case '}':
					st = stLineEnd
				default:
					st, reason = stBad, "',' or '}' was expected after a value"
				}
			case stLineEnd:
				if c != ' ' && c != '\t' && c != '\r' {
					st, reason = stBad, "text follows the record"
				}
			case stBad:
			}
		}
		lr.pos = lr.n
	}
}

// nextIndex returns the index of the first c in buf at or after i, or
// len(buf) when there is none; cached is its previous answer, reused while
// it is not behind i.
func nextIndex(buf []byte, i, cached int, c byte) int {
	if cached >= i {
		return cached
	}
	if k := bytes.IndexByte(buf[i:], c); k >= 0 {
		return i + k
	}
	return len(buf)
}
