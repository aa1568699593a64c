package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tenaxhq/tenax/store"
)

// ControlFile is the job directory's append-only file of operators'
// control requests (store.Controls), one JSON object a line: written by
// `tenax pause|continue|stop` and the page of any process, read by the
// run that holds the job. It is also the audit trail of those requests
// (who asked what, and when).
const ControlFile = "control.jsonl"

var _ store.Controls = (*Store)(nil)

// controlPath is job id's control file; ErrNotFound (wrapped) for an id
// that cannot name a job, and, when job is set, for no such job.
func (s *Store) controlPath(id string, job bool) (string, error) {
	jobs, err := s.jobsDir()
	if err != nil {
		return "", err
	}
	if !validID(id) {
		return "", fmt.Errorf("jsonl: job %q: %w", id, store.ErrNotFound)
	}
	dir := filepath.Join(jobs, id)
	if !job {
		return filepath.Join(dir, ControlFile), nil
	}
	if _, err := os.Stat(filepath.Join(dir, manifestFile)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("jsonl: job %s (no %s in %s): %w", id, manifestFile, dir, store.ErrNotFound)
		}
		return "", fmt.Errorf("jsonl: %w", err)
	}
	return filepath.Join(dir, ControlFile), nil
}

// AppendControl appends req to the job's control file in one fsynced
// write of a whole line: the run reads complete lines only, so it never
// applies half of one. It takes no lock: any process may ask while the
// run holds the job.
func (s *Store) AppendControl(ctx context.Context, id string, req store.ControlRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := req.Check(); err != nil {
		return err
	}
	path, err := s.controlPath(id, true)
	if err != nil {
		return err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	return nil
}

// Controls reads the complete lines of the job's control file from byte
// offset after on (no file: none yet). A stat answers when nothing was
// appended; a line being
// written (no newline yet) is left for the next call, and a line that
// does not decode is passed over. A file shorter than after (replaced)
// is read again from its start.
func (s *Store) Controls(ctx context.Context, id string, after int64) ([]store.ControlRequest, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, after, err
	}
	path, err := s.controlPath(id, false)
	if err != nil {
		return nil, after, err
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, after, nil
	}
	if err != nil {
		return nil, after, fmt.Errorf("jsonl: %w", err)
	}
	if fi.Size() == after {
		return nil, after, nil
	}
	if fi.Size() < after {
		after = 0
	}
	reqs, next, err := readControl(path, after)
	if err != nil {
		return nil, after, fmt.Errorf("jsonl: %w", err)
	}
	return reqs, next, nil
}

// ControlLocation is "control.jsonl", in the job's directory.
func (s *Store) ControlLocation() string { return ControlFile }

// readControl reads the complete lines of the control file at path from
// offset on and returns their requests and the offset after the last of
// them.
func readControl(path string, offset int64) ([]store.ControlRequest, int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, offset, nil
	}
	if err != nil {
		return nil, offset, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, offset, err
	}
	var out []store.ControlRequest
	for {
		line, rest, ok := bytes.Cut(b, []byte("\n"))
		if !ok {
			return out, offset, nil
		}
		offset += int64(len(line)) + 1
		b = rest
		var r store.ControlRequest
		if json.Unmarshal(line, &r) == nil && r.Action != "" {
			out = append(out, r)
		}
	}
}
