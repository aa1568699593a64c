package jsonl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tenaxhq/tenax/store"
)

// decodeRecord is the one rule for a whole line of results.jsonl (one that
// ends in its newline, or the last line, complete without it): it is a
// record when it is a JSON object that encoding/json decodes as a
// store.Record, with an _idx that is a whole number from 0 to maxIdx.
// Anything else is damage, a *CorruptError naming the file, the line
// (lineNo, 0 when unknown) and its byte offset. Resume's scanner (through
// logReader, whose fast path accepts only lines this rule takes), status
// and export (Scan), History, Log and failures.jsonl all judge a line by
// it, so no reader takes a line another refuses. Only the log's last line
// may be torn, and only there does a reader that finds it unfinished
// leave it out (a writer cuts it); that is logReader's to see, as it is
// the only reader that reads to the log's end.
//
// decodeByRule is the rule as it is written; decodeRecord gives what it
// gives, faster: a line fastLine is sure of is decoded by fastDecode
// (FuzzFastDecode holds the two alike), any other by decodeByRule.
func decodeRecord(path string, lineNo int, off int64, line []byte, rec *store.Record) error {
	body := line
	if n := len(body); n > 0 && body[n-1] == '\n' {
		body = body[:n-1]
	}
	if fastDecode(body, rec) {
		return nil
	}
	return decodeByRule(path, lineNo, off, line, rec)
}

// decodeByRule is decodeRecord's rule itself: the scanner's reading of
// the line's shape, then encoding/json's.
func decodeByRule(path string, lineNo int, off int64, line []byte, rec *store.Record) error {
	if err := checkShape(path, lineNo, off, line); err != nil {
		return err
	}
	return unmarshalRecord(path, lineNo, off, line, rec)
}

// unmarshalRecord is decodeByRule's second half, for a line whose shape
// was checked: what encoding/json makes of it.
func unmarshalRecord(path string, lineNo int, off int64, line []byte, rec *store.Record) error {
	*rec = store.Record{}
	if err := json.Unmarshal(line, rec); err != nil {
		return &CorruptError{Path: path, Line: lineNo, Offset: off, Reason: err.Error()}
	}
	return nil
}

// checkShape applies the scanner's reading of a line's structure (its
// _idx above all) to a line read whole: what fastLine is sure of passes
// at once; any other line is scanned byte by byte, as logReader does.
func checkShape(path string, lineNo int, off int64, line []byte) error {
	if n := len(line); n == 0 || line[n-1] != '\n' {
		line = append(line[:n:n], '\n')
	}
	if _, _, ok := fastLine(line[:len(line)-1]); ok {
		return nil
	}
	lr := newLogReaderBytes(line, path, off)
	lr.slow, lr.noDecode = true, true
	lr.lineNo = max(lineNo-1, 0)
	_, err := lr.next()
	var ce *CorruptError
	if errors.As(err, &ce) && lineNo == 0 {
		ce.Line = 0 // numbered from this line alone: not the log's number
	}
	if errors.Is(err, io.EOF) {
		return &CorruptError{Path: path, Line: lineNo, Offset: off, Reason: "the line is blank"}
	}
	return err
}

// idxMismatch is the damage of a line whose _idx decodes otherwise than
// the scanner or the index read it.
func idxMismatch(path string, off int64, got, want int) error {
	return &CorruptError{Path: path, Offset: off, Reason: fmt.Sprintf("its _idx %d was read as %d", got, want)}
}
