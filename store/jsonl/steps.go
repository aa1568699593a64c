package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/tenaxhq/tenax/store"
)

// stepsFile is the job directory's log of agent steps (store.StepLog):
// one line per entry, {"_idx":N,"step":ENTRY}, appended and fsynced
// before AppendSteps returns, appends that meet at the disk sharing one
// fsync (a group commit).
const stepsFile = "steps.jsonl"

var _ store.StepLog = (*Job)(nil)

// AppendSteps appends entries to idx's steps in steps.jsonl and returns
// once they are fsynced.
func (j *Job) AppendSteps(ctx context.Context, idx int, entries ...[]byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j.mu.Lock()
	closed, readOnly := j.closed, j.readOnly
	j.mu.Unlock()
	switch {
	case closed:
		return store.ErrClosed
	case readOnly:
		return store.ErrReadOnly
	}
	var buf []byte
	for _, e := range entries {
		if err := store.CheckStep(e); err != nil {
			return err
		}
		buf = append(buf, `{"_idx":`...)
		buf = strconv.AppendInt(buf, int64(idx), 10)
		buf = append(buf, `,"step":`...)
		buf = append(buf, e...)
		buf = append(buf, "}\n"...)
	}
	l, err := j.openSteps()
	if err != nil {
		return err
	}
	return l.append(idx, buf)
}

// Steps returns idx's entries in steps.jsonl, oldest first. A job open
// for writing reads them through its index; a read-only one reads the
// file, which another process may be writing, as far as it is whole.
func (j *Job) Steps(ctx context.Context, idx int) ([][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	j.mu.Lock()
	closed, readOnly := j.closed, j.readOnly
	j.mu.Unlock()
	if closed {
		return nil, store.ErrClosed
	}
	if readOnly {
		return readSteps(filepath.Join(j.dir, stepsFile), idx)
	}
	l, err := j.openSteps()
	if err != nil {
		return nil, err
	}
	return l.steps(idx)
}

// StepsLocation is "steps.jsonl", the file in the job's directory.
func (j *Job) StepsLocation() string { return stepsFile }

// openSteps opens the job's step log on first use.
func (j *Job) openSteps() (*stepLog, error) {
	j.stepsMu.Lock()
	defer j.stepsMu.Unlock()
	if j.stepLog != nil {
		return j.stepLog, nil
	}
	l, err := openStepLog(j.dir)
	if err != nil {
		return nil, err
	}
	j.stepLog = l
	return l, nil
}

// closeSteps closes the step log, when it was opened.
func (j *Job) closeSteps() error {
	j.stepsMu.Lock()
	defer j.stepsMu.Unlock()
	if j.stepLog == nil {
		return nil
	}
	err := j.stepLog.f.Close()
	j.stepLog = nil
	if err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	return nil
}

// stepLog is steps.jsonl open for appending, with the place of every
// idx's lines.
type stepLog struct {
	path string

	// mu guards the fields below and the writes to f.
	mu    sync.Mutex
	f     *os.File
	size  int64
	lines map[int][]span
	err   error // a failed write or fsync: the log takes no more

	// syncMu lets one fsync at a time cover every write before it.
	syncMu sync.Mutex
	synced int64 // bytes known fsynced, under syncMu
}

// span is one line of the log.
type span struct{ off, n int64 }

// openStepLog opens dir's steps.jsonl, creating it, reads where each
// idx's lines are, and cuts a torn last line (a crash mid-append): its
// entry was never acknowledged, so nothing depended on it.
func openStepLog(dir string) (*stepLog, error) {
	path := filepath.Join(dir, stepsFile)
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		if err := store.SyncDir(dir); err != nil {
			f.Close()
			return nil, fmt.Errorf("jsonl: %w", err)
		}
	}
	l := &stepLog{path: path, f: f, lines: map[int][]span{}}
	whole, err := scanSteps(f, path, func(idx int, sp span, _ []byte) {
		l.lines[idx] = append(l.lines[idx], sp)
	})
	if err != nil {
		f.Close()
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	if whole < fi.Size() {
		if err := f.Truncate(whole); err != nil {
			f.Close()
			return nil, fmt.Errorf("jsonl: cutting the torn last line of %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("jsonl: %w", err)
		}
	}
	l.size, l.synced = whole, whole
	return l, nil
}

// stepLine is a line of steps.jsonl.
type stepLine struct {
	Idx  *int            `json:"_idx"`
	Step json.RawMessage `json:"step"`
}

// scanSteps reads the log in r from its start and calls fn with each
// whole line's idx, place and entry. It returns the bytes that hold whole
// lines: what follows them is a torn last line. A line that does not
// decode before the last one is damage no crash makes, an error naming
// its line.
func scanSteps(r io.Reader, path string, fn func(idx int, sp span, entry []byte)) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var off int64
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			var more []byte
			more, err = br.ReadSlice('\n')
			line = append(append([]byte(nil), line...), more...)
		}
		if errors.Is(err, io.EOF) {
			// No newline: a torn append, or nothing.
			return off, nil
		}
		if err != nil {
			return 0, fmt.Errorf("jsonl: reading %s: %w", path, err)
		}
		var sl stepLine
		if jerr := json.Unmarshal(line, &sl); jerr != nil || sl.Idx == nil || len(sl.Step) == 0 {
			if _, perr := br.Peek(1); errors.Is(perr, io.EOF) {
				return off, nil // a torn last line that happens to end in a newline
			}
			return 0, fmt.Errorf("jsonl: %s:%d: not a step line (%.80q): repair or remove the file", path, n, bytes.TrimSpace(line))
		}
		fn(*sl.Idx, span{off: off, n: int64(len(line))}, sl.Step)
		off += int64(len(line))
	}
}

// readSteps reads idx's entries from the log at path, without an index:
// for a read-only job, rarely asked.
func readSteps(path string, idx int) ([][]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	defer f.Close()
	var out [][]byte
	_, err = scanSteps(f, path, func(i int, _ span, entry []byte) {
		if i == idx {
			out = append(out, bytes.Clone(entry))
		}
	})
	return out, err
}

// append writes lines, all of idx, and returns once they are fsynced.
func (l *stepLog) append(idx int, lines []byte) error {
	l.mu.Lock()
	if l.err != nil {
		err := l.err
		l.mu.Unlock()
		return err
	}
	off := l.size
	if _, err := l.f.Write(lines); err != nil {
		// A part written would glue the next line to it: cut it, and take
		// no more appends whatever the cut does.
		_ = l.f.Truncate(off)
		l.err = fmt.Errorf("jsonl: writing %s: %w", l.path, err)
		l.mu.Unlock()
		return l.err
	}
	for rest := lines; len(rest) > 0; {
		k := bytes.IndexByte(rest, '\n') + 1
		l.lines[idx] = append(l.lines[idx], span{off: l.size, n: int64(k)})
		l.size += int64(k)
		rest = rest[k:]
	}
	end := l.size
	l.mu.Unlock()
	return l.sync(end)
}

// sync returns once the log's first end bytes are fsynced. The appends
// that arrive while one fsync runs wait for it, then one of them fsyncs
// for all (a group commit).
func (l *stepLog) sync(end int64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.synced >= end {
		return nil
	}
	l.mu.Lock()
	upTo, err := l.size, l.err
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		l.mu.Lock()
		l.err = fmt.Errorf("jsonl: syncing %s: %w", l.path, err)
		err = l.err
		l.mu.Unlock()
		return err
	}
	l.synced = upTo
	return nil
}

// steps reads idx's lines back.
func (l *stepLog) steps(idx int) ([][]byte, error) {
	l.mu.Lock()
	spans := append([]span(nil), l.lines[idx]...)
	l.mu.Unlock()
	out := make([][]byte, 0, len(spans))
	for _, sp := range spans {
		line := make([]byte, sp.n)
		if _, err := l.f.ReadAt(line, sp.off); err != nil {
			return nil, fmt.Errorf("jsonl: reading %s: %w", l.path, err)
		}
		var sl stepLine
		if err := json.Unmarshal(line, &sl); err != nil {
			return nil, fmt.Errorf("jsonl: %s at byte %d: %w", l.path, sp.off, err)
		}
		out = append(out, sl.Step)
	}
	return out, nil
}
