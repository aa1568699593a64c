package input

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/tenaxhq/tenax/task"
)

// Format is the syntax of an input file.
type Format string

// The input formats.
const (
	// JSONL is one JSON object per line (.jsonl, .ndjson).
	JSONL Format = "jsonl"
	// CSV is comma-separated values with a header row (.csv).
	CSV Format = "csv"
	// TXT is one item per line, read as {"text": line} (.txt).
	TXT Format = "txt"
)

// MaxLineBytes is the longest line (or CSV record) that can be an item:
// 64 MiB. A longer line is a bad line; for JSONL and TXT input the excess is
// read and discarded without being held in memory.
const MaxLineBytes = 64 << 20

// readBufferSize is the bufio buffer: lines shorter than this are decoded
// straight from it without a copy.
const readBufferSize = 64 << 10

// rawPrefixBytes is how much of an over-long line a bad item's Raw keeps.
const rawPrefixBytes = 256

// Errors a LineError may wrap, for errors.Is.
var (
	// ErrNotObject is a JSONL line that holds valid JSON other than an object.
	ErrNotObject = errors.New("not a JSON object")
	// ErrInvalidUTF8 is a line that is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	// ErrLineTooLong is a line longer than MaxLineBytes.
	ErrLineTooLong = errors.New("line too long")
)

// FormatOf returns the format of path from its extension: .jsonl and
// .ndjson are JSONL, .csv is CSV, .txt is TXT (case-insensitive). Any other
// extension is an error that lists the known ones; a spec can name the
// format explicitly instead.
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson":
		return JSONL, nil
	case ".csv":
		return CSV, nil
	case ".txt":
		return TXT, nil
	}
	return "", fmt.Errorf("input %s: cannot tell the format from the extension %q (want .jsonl, .ndjson, .csv or .txt, or set input.format)", path, filepath.Ext(path))
}

// ParseFormat checks that s names a format ("jsonl", "csv" or "txt").
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case JSONL, CSV, TXT:
		return f, nil
	}
	return "", fmt.Errorf("unknown input format %q (want jsonl, csv or txt)", s)
}

// LineError reports a bad line: the file, the 1-based physical line where
// the item starts, the idx the item was given, and what is wrong with it.
// A bad CSV header has Idx -1.
type LineError struct {
	Path string
	Line int
	Idx  int
	Err  error
}

// Error formats the error as "path:line: problem".
func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err) }

// Unwrap returns the problem with the line.
func (e *LineError) Unwrap() error { return e.Err }

// Reader reads the items of one input file in order. It is not safe for
// concurrent use: the engine's single feeding goroutine owns it.
type Reader struct {
	path   string
	format Format
	closer io.Closer
	br     *bufio.Reader

	maxLine  int    // MaxLineBytes; lowered by tests
	line     int    // physical lines consumed so far
	itemLine int    // the physical line where the last item returned started
	idx      int    // idx of the next item
	buf      []byte // accumulates lines longer than the bufio buffer
	started  bool   // the BOM check and the CSV header are done

	csv     *csv.Reader
	header  []string
	keyJSON [][]byte // header names, JSON-encoded once

	// lines is the decoder of JSONL lines, kept from line to line: a new
	// json.Decoder a line was 5 of its allocations and 900 B. lineSrc is
	// what it reads, reset to each line; lineEnd is its input offset at
	// the end of the last line decoded.
	lines   *json.Decoder
	lineSrc bytes.Reader
	lineEnd int64
}

// maxReusedLine is the longest line decoded with Reader.lines: its buffer
// grows to the longest line it reads, and keeps it.
const maxReusedLine = 64 << 10

// Open opens path for reading items of format f. The caller must Close it.
func Open(path string, f Format) (*Reader, error) {
	if _, err := ParseFormat(string(f)); err != nil {
		return nil, fmt.Errorf("input %s: %w", path, err)
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	r := NewReader(file, path, f)
	r.closer = file
	return r, nil
}

// NewReader reads items of format f from src; name is the file name used
// in errors. Close does not close src. An unknown format makes every Next
// fail.
func NewReader(src io.Reader, name string, f Format) *Reader {
	return &Reader{
		path:    name,
		format:  f,
		br:      bufio.NewReaderSize(src, readBufferSize),
		maxLine: MaxLineBytes,
	}
}

// Close releases the file opened by Open.
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	err := r.closer.Close()
	r.closer = nil
	return err
}

// Next returns the next item, with Idx one more than the previous item's,
// or io.EOF after the last. A bad line returns its Item (Fields nil, Raw
// the line's text as a JSON string) together with a *LineError; reading
// can go on after it. Any other error is an I/O error (or, for CSV, a bad
// header, as a *LineError with Idx -1) after which reading cannot go on.
func (r *Reader) Next() (task.Item, error) { return r.next(decodeFields) }

// NextRaw is Next without the item's Fields: its Idx, ID and Raw, and the
// same bad lines with the same errors, for a caller that stores items
// rather than runs them (an enqueue for workers). A JSONL line is checked
// and its top-level "id" found without decoding it into a map.
func (r *Reader) NextRaw() (task.Item, error) { return r.next(decodeRaw) }

// decoding is how much of an item Reader.next builds.
type decoding int

const (
	// decodeFields builds the whole item (Next).
	decodeFields decoding = iota
	// decodeRaw builds its ID and Raw, not its Fields (NextRaw).
	decodeRaw
	// decodeCheck builds nothing but its Idx: what a Scan needs to find
	// the bad lines. A bad line's item is built as by Next.
	decodeCheck
)

// next is Next, building as much of the item as d says.
func (r *Reader) next(d decoding) (task.Item, error) {
	if !r.started {
		if err := r.start(); err != nil {
			return task.Item{}, err
		}
	}
	switch r.format {
	case JSONL, TXT:
		return r.nextLine(d)
	case CSV:
		return r.nextRecord(d)
	}
	return task.Item{}, fmt.Errorf("input %s: unknown format %q (want jsonl, csv or txt)", r.path, r.format)
}

// NextIdx returns the idx the next item will have.
func (r *Reader) NextIdx() int { return r.idx }

// Skip reads past the next item without decoding it, as a resume does for
// an item that already has its outcome, and returns the idx it had, or
// io.EOF after the last. A bad line is skipped like any other. JSONL and
// TXT lines are only found, never parsed; a CSV record is still parsed, as
// a quoted field may span lines.
func (r *Reader) Skip() (int, error) {
	if !r.started {
		if err := r.start(); err != nil {
			return 0, err
		}
	}
	switch r.format {
	case JSONL, TXT:
	case CSV:
		it, err := r.nextRecord(decodeCheck)
		var le *LineError
		if errors.As(err, &le) && le.Idx >= 0 {
			return it.Idx, nil
		}
		return it.Idx, err
	default:
		return 0, fmt.Errorf("input %s: unknown format %q (want jsonl, csv or txt)", r.path, r.format)
	}
	for {
		line, tooLong, err := r.readLine()
		if err != nil {
			return 0, err
		}
		// An over-long line is a bad item to Next even when blank: so it
		// is one here, or the items after it would shift by one idx.
		if !tooLong && isBlank(line) {
			continue
		}
		r.itemLine = r.line
		idx := r.idx
		r.idx++
		return idx, nil
	}
}

// SkipWhile reads past items without decoding them, as Skip does, for as
// long as skip(idx) holds for the idx of the next one; it returns nil when
// skip stops it and io.EOF after the last item. A resume skips a million
// recorded items this way: the lines the reader's buffer holds are found
// with one search for each newline, where Skip costs a call through
// bufio for each (a tenth of a warm first resume's CPU;
// docs/benchmarks.md, issue 38). What it reads is what Skip reads, so an
// OpenScanned input is checked as far, and to its end.
func (r *Reader) SkipWhile(skip func(idx int) bool) error {
	if !r.started {
		if err := r.start(); err != nil {
			return err
		}
	}
	for skip(r.idx) {
		if r.format == JSONL || r.format == TXT {
			if r.skipBuffered(skip) {
				continue
			}
		}
		// A line longer than the buffer, the last line without a newline,
		// a CSV record, or an empty buffer: one at a time.
		if _, err := r.Skip(); err != nil {
			return err
		}
	}
	return nil
}

// skipBuffered skips the whole lines the reader's buffer holds while
// skip(idx) holds, blank ones as lines but not items, and reports whether
// it found any.
func (r *Reader) skipBuffered(skip func(idx int) bool) bool {
	buf, _ := r.br.Peek(r.br.Buffered())
	i := 0
	for {
		k := bytes.IndexByte(buf[i:], '\n')
		if k < 0 {
			break
		}
		r.line++
		if line := trimEOL(buf[i : i+k+1]); len(line) > r.maxLine || !isBlank(line) {
			r.itemLine = r.line
			r.idx++
		}
		i += k + 1
		if !skip(r.idx) {
			break
		}
	}
	_, _ = r.br.Discard(i)
	return i > 0
}

// start strips a byte order mark and reads the CSV header.
func (r *Reader) start() error {
	r.started = true
	if b, err := r.br.Peek(3); err == nil && string(b) == "\uFEFF" {
		_, _ = r.br.Discard(3)
	}
	if r.format != CSV {
		return nil
	}
	r.csv = csv.NewReader(r.br)
	r.csv.ReuseRecord = true
	header, err := r.csv.Read()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return &LineError{Path: r.path, Line: pe.StartLine, Idx: -1, Err: fmt.Errorf("bad header: %w", pe.Err)}
		}
		return fmt.Errorf("input %s: %w", r.path, err)
	}
	seen := make(map[string]bool, len(header))
	for _, h := range header {
		if !utf8.ValidString(h) {
			return &LineError{Path: r.path, Line: 1, Idx: -1, Err: fmt.Errorf("bad header: %w", ErrInvalidUTF8)}
		}
		if seen[h] {
			return &LineError{Path: r.path, Line: 1, Idx: -1, Err: fmt.Errorf("bad header: duplicate column %q", h)}
		}
		seen[h] = true
	}
	r.header = append([]string(nil), header...)
	r.keyJSON = make([][]byte, len(header))
	for i, h := range r.header {
		r.keyJSON[i] = task.AppendJSONString(nil, h)
	}
	return nil
}

// nextLine reads the next non-blank line of JSONL or TXT input.
func (r *Reader) nextLine(d decoding) (task.Item, error) {
	for {
		line, tooLong, err := r.readLine()
		if err != nil {
			return task.Item{}, err
		}
		if tooLong {
			return r.bad(truncate(line), r.line, fmt.Errorf("%w: over the %d MiB limit", ErrLineTooLong, r.maxLine>>20))
		}
		if isBlank(line) {
			continue
		}
		if !utf8.Valid(line) {
			return r.bad(line, r.line, ErrInvalidUTF8)
		}
		r.itemLine = r.line
		if r.format == TXT {
			item := task.Item{Idx: r.idx}
			if d == decodeFields {
				item.Fields = map[string]any{"text": string(line)}
			}
			if d != decodeCheck {
				raw := append([]byte(`{"text":`), task.AppendJSONString(nil, string(line))...)
				item.Raw = append(raw, '}')
			}
			r.idx++
			return item, nil
		}
		return r.decodeJSONL(line, d)
	}
}

// decodeJSONL turns one line into an item, or a bad line.
func (r *Reader) decodeJSONL(line []byte, d decoding) (task.Item, error) {
	if !json.Valid(line) {
		var v any
		err := json.Unmarshal(line, &v)
		if err == nil { // cannot happen: Valid and Unmarshal agree
			err = errors.New("malformed")
		}
		return r.bad(line, r.line, fmt.Errorf("invalid JSON: %w", err))
	}
	trimmed := bytes.TrimSpace(line)
	if trimmed[0] != '{' {
		return r.bad(line, r.line, fmt.Errorf("%w (got %s)", ErrNotObject, jsonKind(trimmed[0])))
	}
	// A valid JSON object always decodes into a map: the lean paths
	// accept and refuse the same lines as the decoding one.
	switch d {
	case decodeCheck:
		item := task.Item{Idx: r.idx}
		r.idx++
		return item, nil
	case decodeRaw:
		item := task.Item{Idx: r.idx, ID: idOfObject(trimmed), Raw: bytes.Clone(trimmed)}
		r.idx++
		return item, nil
	}
	fields, err := r.decodeObject(trimmed)
	if err != nil {
		return r.bad(line, r.line, fmt.Errorf("invalid JSON: %w", err))
	}
	item := task.Item{
		Idx:    r.idx,
		ID:     idOf(fields["id"]),
		Fields: fields,
		Raw:    bytes.Clone(trimmed),
	}
	r.idx++
	return item, nil
}

// decodeObject decodes obj, a valid JSON object with nothing around it,
// numbers as json.Number. Objects up to maxReusedLine go through r.lines;
// should that decode fail (its error sticks to the decoder, and its
// offsets count from the first line) or not end at obj's end, the
// decoder is dropped and obj decoded by a new one, as every line was
// before: no line's bytes can reach the next.
func (r *Reader) decodeObject(obj []byte) (map[string]any, error) {
	if len(obj) <= maxReusedLine {
		if r.lines == nil {
			r.lineSrc.Reset(nil)
			r.lines = json.NewDecoder(&r.lineSrc)
			r.lines.UseNumber()
			r.lineEnd = 0
		}
		r.lineSrc.Reset(obj)
		var fields map[string]any
		err := r.lines.Decode(&fields)
		if end := r.lineEnd + int64(len(obj)); err == nil && r.lines.InputOffset() == end && r.lineSrc.Len() == 0 {
			r.lineEnd = end
			return fields, nil
		}
		r.lines = nil
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	var fields map[string]any
	err := dec.Decode(&fields)
	return fields, err
}

// nextRecord reads the next non-blank CSV record.
func (r *Reader) nextRecord(d decoding) (task.Item, error) {
	if r.header == nil {
		return task.Item{}, io.EOF
	}
	for {
		rec, err := r.csv.Read()
		if err == io.EOF {
			return task.Item{}, io.EOF
		}
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return task.Item{}, fmt.Errorf("input %s: %w", r.path, err)
			}
			if errors.Is(pe.Err, csv.ErrFieldCount) {
				if len(rec) == 1 && isBlank([]byte(rec[0])) {
					continue
				}
				return r.bad(csvText(rec), pe.StartLine, fmt.Errorf("wrong number of fields: got %d, want %d", len(rec), len(r.header)))
			}
			// The record is cut short where the parser stopped: no Raw.
			return r.bad(nil, pe.StartLine, pe.Err)
		}
		line, _ := r.csv.FieldPos(0)
		r.itemLine = line
		size := 0
		for _, f := range rec {
			size += len(f)
		}
		if size > r.maxLine {
			return r.bad(truncate(csvText(rec)), line, fmt.Errorf("%w: record over the %d MiB limit", ErrLineTooLong, r.maxLine>>20))
		}
		if len(rec) == 1 && isBlank([]byte(rec[0])) {
			continue
		}
		for _, f := range rec {
			if !utf8.ValidString(f) {
				return r.bad(csvText(rec), line, ErrInvalidUTF8)
			}
		}
		if d == decodeCheck {
			item := task.Item{Idx: r.idx}
			r.idx++
			return item, nil
		}
		var fields map[string]any
		if d == decodeFields {
			fields = make(map[string]any, len(rec))
		}
		id := ""
		raw := make([]byte, 0, size+len(rec)*8+2)
		raw = append(raw, '{')
		for i, f := range rec {
			if fields != nil {
				fields[r.header[i]] = f
			}
			if r.header[i] == "id" {
				id = f
			}
			if i > 0 {
				raw = append(raw, ',')
			}
			raw = append(raw, r.keyJSON[i]...)
			raw = append(raw, ':')
			raw = task.AppendJSONString(raw, f)
		}
		raw = append(raw, '}')
		item := task.Item{Idx: r.idx, ID: id, Fields: fields, Raw: raw}
		r.idx++
		return item, nil
	}
}

// Line returns the 1-based physical line of the file where the item Next
// last returned starts (after a CSV header, blank lines and bad lines), so
// that a message about an item can point into the file; 0 before the first.
func (r *Reader) Line() int { return r.itemLine }

// bad returns a bad line's item, taking an idx, with its LineError.
func (r *Reader) bad(text []byte, line int, err error) (task.Item, error) {
	r.itemLine = line
	item := task.Item{Idx: r.idx, Raw: task.AppendJSONString(nil, string(text))}
	r.idx++
	return item, &LineError{Path: r.path, Line: line, Idx: item.Idx, Err: err}
}

// readLine returns the next physical line without its line end. The slice
// is valid until the next call. A line longer than maxLine is reported as
// tooLong with only its beginning; the rest is read and dropped.
func (r *Reader) readLine() (line []byte, tooLong bool, err error) {
	frag, err := r.br.ReadSlice('\n')
	if err == nil {
		r.line++
		line = trimEOL(frag)
		if len(line) > r.maxLine {
			return line[:r.maxLine], true, nil
		}
		return line, false, nil
	}
	r.buf = r.buf[:0]
	total := 0
	for {
		total += len(frag)
		if len(r.buf) <= r.maxLine {
			r.buf = append(r.buf, frag...)
		}
		if err == bufio.ErrBufferFull {
			frag, err = r.br.ReadSlice('\n')
			continue
		}
		if err != nil && err != io.EOF {
			return nil, false, fmt.Errorf("input %s: %w", r.path, err)
		}
		if err == io.EOF && total == 0 {
			return nil, false, io.EOF
		}
		r.line++
		content := total - (len(r.buf) - len(trimEOL(r.buf)))
		if content > r.maxLine {
			return r.buf, true, nil
		}
		return trimEOL(r.buf), false, nil
	}
}

// truncate keeps the beginning of an over-long line for its Raw.
func truncate(b []byte) []byte { return b[:min(len(b), rawPrefixBytes)] }

// trimEOL drops a trailing "\n" or "\r\n".
func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'})
}

// isBlank reports whether b holds only ASCII whitespace.
func isBlank(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n', '\v', '\f':
		default:
			return false
		}
	}
	return true
}

// idOf returns an "id" field that is a string or a number, as text.
func idOf(v any) string {
	switch id := v.(type) {
	case string:
		return id
	case json.Number:
		return id.String()
	}
	return ""
}

// jsonKind names the JSON value that starts with c.
func jsonKind(c byte) string {
	switch c {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// csvText writes a CSV record back as one line of CSV, for a bad record's
// Raw.
func csvText(rec []string) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(rec) // writes to a bytes.Buffer cannot fail
	w.Flush()
	return trimEOL(b.Bytes())
}

// idOfObject returns what idOf(fields["id"]) is for obj, a valid JSON
// object, decoded into fields: the value of its last top-level "id"
// member, when that is a string or a number. It walks the object's
// top-level members without decoding any other value.
func idOfObject(obj []byte) string {
	id := ""
	i := skipSpace(obj, 1) // past the '{'
	for i < len(obj) && obj[i] == '"' {
		keyEnd := endOfString(obj, i)
		key := obj[i:keyEnd]
		i = skipSpace(obj, skipSpace(obj, keyEnd)+1) // past the ':'
		valEnd := endOfValue(obj, i)
		if jsonString(key) == "id" {
			id = idText(obj[i:valEnd])
		}
		i = skipSpace(obj, valEnd)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return id
}

// idText is idOf of the JSON value v.
func idText(v []byte) string {
	switch c := v[0]; {
	case c == '"':
		return jsonString(v)
	case c == '-' || (c >= '0' && c <= '9'):
		return string(v)
	}
	return ""
}

// jsonString decodes the valid JSON string s. One without escapes is its
// bytes between the quotes, as encoding/json decodes it from valid UTF-8.
func jsonString(s []byte) string {
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s[1 : len(s)-1])
	}
	var out string
	if err := json.Unmarshal(s, &out); err != nil {
		return "" // cannot happen: s is a valid JSON string
	}
	return out
}

// skipSpace returns the index of the first byte of b at or after i that
// is not JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// endOfString returns the index just past the valid JSON string that
// starts at b[i].
func endOfString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// endOfValue returns the index just past the valid JSON value that
// starts at b[i].
func endOfValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return endOfString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = endOfString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
		j++
	}
	return j
}
