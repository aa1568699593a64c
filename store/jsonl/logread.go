package jsonl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/tenaxhq/tenax/store"
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

// scanState is logReader's place in a line. Each state but stLineStart
// has a step function in steps that reads one byte, as encoding/json's
// scanner does; a newline and the end of the log are read by next itself,
// since what they mean depends only on the state.
type scanState uint8

const (
	stLineStart  scanState = iota // before the line's '{', blank space allowed
	stKey                         // expecting a key or '}'
	stKeyStr                      // inside a key
	stKeyEsc                      // after a '\\' inside a key
	stColon                       // after a key
	stValue                       // expecting a top-level value
	stStr                         // inside a top-level string value
	stStrEsc                      // after a '\\' inside a top-level string
	stScalar                      // inside a top-level number or literal
	stNested                      // inside a nested object or array
	stNestedStr                   // inside a string in a nested value
	stNestedEsc                   // after a '\\' inside a string in a nested value
	stAfterValue                  // expecting ',' or '}'
	stLineEnd                     // after the closing '}', expecting the newline
	stBad                         // not a record: read on to the newline
)

// steps holds the step function of each state.
var steps = [...]func(*lineScan, byte){
	stKey:        (*lineScan).beforeKey,
	stKeyStr:     (*lineScan).keyStr,
	stKeyEsc:     (*lineScan).keyEsc,
	stColon:      (*lineScan).colon,
	stValue:      (*lineScan).value,
	stStr:        (*lineScan).str,
	stStrEsc:     (*lineScan).strEsc,
	stScalar:     (*lineScan).scalar,
	stNested:     (*lineScan).nested,
	stNestedStr:  (*lineScan).nestedStr,
	stNestedEsc:  (*lineScan).nestedEsc,
	stAfterValue: (*lineScan).afterValue,
	stLineEnd:    (*lineScan).lineEnd,
	stBad:        func(*lineScan, byte) {},
}

// The top-level fields the scanner looks at.
const (
	fieldOther = iota
	fieldIdx
	fieldError
	fieldClass
)

// lineScan is what the scan of one line has read so far.
type lineScan struct {
	st              scanState
	start           int64 // the line's offset in the file
	lineNo          int
	reason          string // why the line is not a record, in stBad
	field           int    // the top-level field whose value is being read
	key             [8]byte
	keyLen          int // -1: not a key we look at
	depth           int // nesting, in stNested
	valLen          int
	class           [8]byte
	idx, idxDigits  int
	idxNeg, idxSeen bool
	failed          bool
}

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
	// slow turns the fast path off, for the tests and benchmarks that
	// hold it against the byte-at-a-time scanner.
	slow bool
	// scan is the byte-at-a-time scanner's state of the current line,
	// kept here: a lineScan of next's own escapes (its step functions
	// take its address), one allocation per line.
	scan lineScan
	// long holds the part of a line the byte-at-a-time scanner reads
	// that earlier buffers held, so that the whole line can be decoded.
	long []byte
	// noDecode leaves a line the byte-at-a-time scanner takes undecoded,
	// for checkShape, whose caller decodes it.
	noDecode bool
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

// newLogReaderBytes reads the log bytes data, which start at base, from
// memory.
func newLogReaderBytes(data []byte, path string, base int64) *logReader {
	return &logReader{path: path, buf: data, n: len(data), eof: true, base: base, tornAt: -1,
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

// refill moves the part of a line the buffer ends with to the buffer's
// start and reads on after it, so that a line a buffer boundary cuts is
// read whole by the fast path, where the byte-at-a-time scanner and a
// decode took it before (one line in every buffer read, a tenth of a warm
// scan's CPU; docs/benchmarks.md, issue 38). It reports whether anything
// more was read.
func (lr *logReader) refill() bool {
	if lr.eof || lr.err != nil {
		return false
	}
	kept := copy(lr.buf, lr.buf[lr.pos:lr.n])
	lr.base += int64(lr.pos)
	lr.pos, lr.n = 0, kept
	lr.nextQuote, lr.nextSlash, lr.nextNL = -1, -1, -1
	for lr.n == kept {
		n, err := lr.r.Read(lr.buf[kept:])
		lr.n += n
		if errors.Is(err, io.EOF) {
			lr.eof = true
			break
		}
		if err != nil {
			lr.err = err
			break
		}
	}
	return lr.n > kept
}

// next returns the next complete record line. At the end of the log it
// returns io.EOF, with tornAt set when the log ends in an incomplete line.
// A damaged line that is not the last is a *CorruptError.
func (lr *logReader) next() (lineInfo, error) {
	if !lr.slow {
		if line, ok := lr.fast(); ok {
			return line, nil
		}
	}
	s := &lr.scan
	*s = lineScan{lineNo: lr.lineNo + 1}
	lr.long = lr.long[:0]
	for {
		if lr.pos == lr.n {
			if lr.eof || lr.err != nil {
				return lr.atEOF(s)
			}
			lr.keep(s)
			if !lr.fill() {
				return lr.atEOF(s)
			}
		}
		buf := lr.buf[:lr.n]
		for i := lr.pos; i < len(buf); i++ {
			if s.skims() {
				if i = lr.skim(buf, i); i == len(buf) {
					break
				}
			}
			switch c := buf[i]; {
			case c == '\n':
				lr.lineNo++
				if s.st == stLineStart {
					continue
				}
				lr.pos = i + 1
				line, err := s.atNewline(lr.path, lr.base+int64(lr.pos))
				if err == nil {
					err = lr.decode(s, &line, lr.pos)
				}
				return line, err
			case s.st == stLineStart:
				s.begin(c, lr.base+int64(i), lr.lineNo+1)
			default:
				steps[s.st](s, c)
			}
		}
		lr.pos = lr.n
	}
}

// fast reads the next line with fastLine when the buffer holds all of it
// and fastLine is sure of it; otherwise it reads nothing.
func (lr *logReader) fast() (lineInfo, bool) {
	if lr.pos == lr.n && !lr.fill() {
		return lineInfo{}, false
	}
	buf := lr.buf[:lr.n]
	if lr.nextNL < lr.pos {
		// One pass finds the newline and any control byte before it.
		k := firstControl(buf, lr.pos)
		if k == len(buf) && lr.pos > 0 && lr.refill() {
			// The line runs past the buffer: it starts the buffer now,
			// and is read on.
			buf = lr.buf[:lr.n]
			k = firstControl(buf, lr.pos)
		}
		if k == len(buf) || buf[k] != '\n' {
			// Not a whole line, or one with a control byte: the
			// byte-at-a-time scanner reads it (and says what is wrong).
			return lineInfo{}, false
		}
		lr.nextNL = k
	} else if lr.nextNL == len(buf) || hasControl(buf[lr.pos:lr.nextNL]) {
		return lineInfo{}, false
	}
	idx, failed, ok := fastClean(buf[lr.pos:lr.nextNL])
	if !ok {
		return lineInfo{}, false
	}
	line := lineInfo{start: lr.base + int64(lr.pos), end: lr.base + int64(lr.nextNL) + 1, idx: idx, failed: failed}
	lr.pos = lr.nextNL + 1
	lr.lineNo++
	return line, true
}

// atEOF ends the scan at the end of the log: a record line that lacks only
// its newline is returned, anything else unfinished is the torn last line.
func (lr *logReader) atEOF(s *lineScan) (lineInfo, error) {
	if lr.err != nil {
		return lineInfo{}, fmt.Errorf("jsonl: reading %s: %w", lr.path, lr.err)
	}
	switch {
	case s.st == stLineStart:
	case s.st == stLineEnd && s.idxSeen:
		line := lineInfo{start: s.start, end: lr.base + int64(lr.n), idx: s.idx, failed: s.failed, noNewline: true}
		return line, lr.decode(s, &line, lr.n)
	default:
		lr.tornAt = s.start
	}
	return lineInfo{}, io.EOF
}

// keep saves the part of the line under way that the buffer holds, before
// the buffer is read over.
func (lr *logReader) keep(s *lineScan) {
	if s.st == stLineStart || s.st == stBad || lr.noDecode {
		return
	}
	from := max(s.start-lr.base, 0)
	lr.long = append(lr.long, lr.buf[from:lr.n]...)
}

// decode applies the rule (decodeRecord) to the line the byte-at-a-time
// scanner took, whose bytes end at buf[end]: its structure was checked,
// what encoding/json makes of it decides, and its _idx and outcome are
// the record's.
func (lr *logReader) decode(s *lineScan, line *lineInfo, end int) error {
	if lr.noDecode {
		return nil
	}
	b := lr.buf[max(s.start-lr.base, 0):end]
	if len(lr.long) > 0 {
		lr.long = append(lr.long, b...)
		b = lr.long
	}
	var rec store.Record
	err := unmarshalRecord(lr.path, s.lineNo, s.start, b, &rec)
	if cap(lr.long) > 4<<20 {
		lr.long = nil // a long line's copy is not kept for the next
	}
	if err != nil {
		return err
	}
	line.idx, line.failed = rec.Idx, rec.Failed()
	return nil
}

// skim moves i over the bytes of a string the scanner does not read, to
// the next '"', '\\' or newline, or to len(buf).
func (lr *logReader) skim(buf []byte, i int) int {
	lr.nextQuote = nextIndex(buf, i, lr.nextQuote, '"')
	lr.nextSlash = nextIndex(buf, i, lr.nextSlash, '\\')
	lr.nextNL = nextIndex(buf, i, lr.nextNL, '\n')
	return min(lr.nextQuote, lr.nextSlash, lr.nextNL)
}

// skims reports whether the scan is inside a string whose bytes it does
// not read, which logReader.skim passes over at memchr speed.
func (s *lineScan) skims() bool {
	return s.st == stNestedStr || s.st == stStr && s.field == fieldOther
}

// atNewline ends the line at its newline: a record, or why it is not one.
func (s *lineScan) atNewline(path string, end int64) (lineInfo, error) {
	switch {
	case s.st == stLineEnd && s.idxSeen:
		return lineInfo{start: s.start, end: end, idx: s.idx, failed: s.failed}, nil
	case s.st == stLineEnd:
		s.reason = "it has no _idx"
	case s.st != stBad:
		s.reason = "the line ends inside the JSON object"
	}
	return lineInfo{}, &CorruptError{Path: path, Line: s.lineNo, Offset: s.start, Reason: s.reason}
}

func (s *lineScan) corrupt(reason string) { s.st, s.reason = stBad, reason }

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

// begin reads a byte before the line's '{': the line starts at the first
// byte that is not blank.
func (s *lineScan) begin(c byte, off int64, lineNo int) {
	if isBlank(c) {
		return
	}
	s.start, s.lineNo = off, lineNo
	if c != '{' {
		s.corrupt("it does not start with '{'")
		return
	}
	s.st, s.depth = stKey, 1
}

func (s *lineScan) beforeKey(c byte) {
	switch {
	case isBlank(c):
	case c == '"':
		s.st, s.keyLen = stKeyStr, 0
	case c == '}':
		s.st = stLineEnd
	default:
		s.corrupt("a key was expected")
	}
}

func (s *lineScan) keyStr(c byte) {
	switch {
	case c == '\\':
		s.st, s.keyLen = stKeyEsc, -1
	case c == '"':
		s.st = stColon
	case s.keyLen >= 0 && s.keyLen < len(s.key):
		s.key[s.keyLen] = c
		s.keyLen++
	default:
		s.keyLen = -1
	}
}

func (s *lineScan) keyEsc(byte) { s.st = stKeyStr }

func (s *lineScan) colon(c byte) {
	switch {
	case isBlank(c):
	case c == ':':
		s.st, s.field = stValue, fieldOther
		if s.keyLen >= 0 {
			switch string(s.key[:s.keyLen]) {
			case "_idx":
				s.field = fieldIdx
			case "error":
				s.field = fieldError
			case "class":
				s.field = fieldClass
			}
		}
	default:
		s.corrupt("':' was expected after a key")
	}
}

func (s *lineScan) value(c byte) {
	switch {
	case isBlank(c):
	case s.field == fieldIdx:
		s.idxStart(c)
	case c == '"':
		s.st, s.valLen = stStr, 0
	case c == '{' || c == '[':
		s.st, s.depth = stNested, 2
	default:
		s.st = stScalar
	}
}

// idxStart reads the first byte of _idx's value, which must be a number.
func (s *lineScan) idxStart(c byte) {
	s.st, s.idx, s.idxDigits, s.idxNeg = stScalar, 0, 0, false
	switch {
	case c == '"':
		s.corrupt("_idx is a string")
	case c == '-':
		s.idxNeg = true
	case c >= '0' && c <= '9':
		s.idx, s.idxDigits = int(c-'0'), 1
	default:
		s.corrupt("_idx is not a number")
	}
}

func (s *lineScan) scalar(c byte) {
	switch {
	case c == ',' || c == '}' || isBlank(c):
		s.scalarEnd(c)
	case s.field != fieldIdx:
	case c < '0' || c > '9':
		s.corrupt("_idx is not a whole number")
	default:
		s.idx = s.idx*10 + int(c-'0')
		s.idxDigits++
		if s.idx > maxIdx {
			s.corrupt(fmt.Sprintf("_idx is larger than %d", maxIdx))
		}
	}
}

// scalarEnd reads the byte that ends a number or literal, checking _idx's.
func (s *lineScan) scalarEnd(c byte) {
	if s.field == fieldIdx {
		switch {
		case s.idxDigits == 0:
			s.corrupt("_idx is not a number")
			return
		case s.idxNeg:
			s.corrupt("_idx is negative")
			return
		}
		s.idxSeen = true
	}
	s.st = stAfterValue
	s.afterValue(c)
}

func (s *lineScan) str(c byte) {
	switch c {
	case '\\':
		s.st = stStrEsc
		s.valLen++
	case '"':
		s.st = stAfterValue
		switch s.field {
		case fieldError:
			s.failed = s.failed || s.valLen > 0
		case fieldClass:
			s.failed = s.failed || s.valLen > 0 && !(s.valLen == len("unknown") && string(s.class[:s.valLen]) == "unknown")
		}
	default:
		if s.field == fieldClass && s.valLen < len(s.class) {
			s.class[s.valLen] = c
		}
		s.valLen++
	}
}

func (s *lineScan) strEsc(byte) {
	s.st = stStr
	s.valLen++
}

func (s *lineScan) nested(c byte) {
	switch c {
	case '"':
		s.st = stNestedStr
	case '{', '[':
		s.depth++
	case '}', ']':
		if s.depth--; s.depth == 1 {
			s.st = stAfterValue
		}
	}
}

func (s *lineScan) nestedStr(c byte) {
	switch c {
	case '\\':
		s.st = stNestedEsc
	case '"':
		s.st = stNested
	}
}

func (s *lineScan) nestedEsc(byte) { s.st = stNestedStr }

func (s *lineScan) afterValue(c byte) {
	switch {
	case isBlank(c):
	case c == ',':
		s.st = stKey
	case c == '}':
		s.st = stLineEnd
	default:
		s.corrupt("',' or '}' was expected after a value")
	}
}

func (s *lineScan) lineEnd(c byte) {
	if !isBlank(c) {
		s.corrupt("text follows the record")
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
