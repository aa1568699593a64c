package jsonl

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/tenaxhq/tenax/store"
)

// The files of a job directory.
const (
	manifestFile = "manifest.json"
	resultsFile  = "results.jsonl"
	failuresFile = "failures.jsonl"
	lockFile     = "lock"
)

// Defaults of Store's flush settings.
const (
	DefaultFlushEvery    = 100
	DefaultFlushInterval = time.Second
)

// Store keeps jobs as directories under Home/jobs, one per job id. Only
// Home must be set; the zero values of the other fields take the defaults.
// A Store holds no state of its own and may be copied and shared.
type Store struct {
	// Home is tenax's data directory; jobs live in Home/jobs/<id>/.
	Home string
	// FlushEvery is how many appended records may wait before a job
	// writes and fsyncs them (DefaultFlushEvery when zero).
	FlushEvery int
	// FlushInterval is how long an appended record may wait before a job
	// writes and fsyncs it (DefaultFlushInterval when zero).
	FlushInterval time.Duration
	// Logger, when set, receives a line every few seconds while a job's
	// results.jsonl is read whole (results.idx missing, behind or not
	// matching: a job an older tenax wrote), which takes seconds to
	// minutes for millions of records.
	Logger *slog.Logger
}

// readProgress is the progress report of job id's long log reads.
func (s *Store) readProgress(id string) func(read, total int64) {
	if s.Logger == nil {
		return nil
	}
	return func(read, total int64) {
		s.Logger.Info("reading results.jsonl to index it", "job", id,
			"read", fmt.Sprintf("%d of %d MB (%d%%)", read>>20, total>>20, 100*read/max(total, 1)))
	}
}

// decodeProgress is the Job's report of a long Scan or Failures: how many
// of the job's items its latest records were read and decoded for.
func (s *Store) decodeProgress(id string) func(done, total int64) {
	if s.Logger == nil {
		return nil
	}
	return func(done, total int64) {
		s.Logger.Info("reading the job's records", "job", id,
			"read", fmt.Sprintf("%d of %d items (%d%%)", done, total, 100*done/max(total, 1)))
	}
}

var _ store.Store = (*Store)(nil)

func (s *Store) jobsDir() (string, error) {
	if s.Home == "" {
		return "", errors.New("jsonl: Store.Home is empty")
	}
	return filepath.Join(s.Home, "jobs"), nil
}

// validID reports whether id can name a job directory: letters, digits,
// '_', '-' and '.', not starting with '.'.
func validID(id string) bool {
	if id == "" || id[0] == '.' || len(id) > 200 {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// Create makes the job's directory, writes its manifest and returns the job
// open for writing, locked. An empty m.ID becomes "job_YYYYMMDD_HHMMSS" of
// m.Created in the time zone it carries, with "_2", "_3", … on collision;
// a zero m.Created becomes now.
func (s *Store) Create(ctx context.Context, m store.Manifest) (store.Job, error) {
	jobs, err := s.jobsDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(jobs, 0o755); err != nil {
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	if m.Created.IsZero() {
		m.Created = time.Now()
	}
	if m.ID != "" {
		if !validID(m.ID) {
			return nil, fmt.Errorf("jsonl: job id %q: use letters, digits, '_', '-' and '.'", m.ID)
		}
		if err := os.Mkdir(filepath.Join(jobs, m.ID), 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return nil, fmt.Errorf("jsonl: job %s: %w", m.ID, store.ErrExists)
			}
			return nil, fmt.Errorf("jsonl: %w", err)
		}
	} else {
		base := "job_" + m.Created.Format("20060102_150405")
		for n := 1; ; n++ {
			id := base
			if n > 1 {
				id += "_" + strconv.Itoa(n)
			}
			err := os.Mkdir(filepath.Join(jobs, id), 0o755)
			if err == nil {
				m.ID = id
				break
			}
			if !errors.Is(err, fs.ErrExist) {
				return nil, fmt.Errorf("jsonl: %w", err)
			}
		}
	}
	dir := filepath.Join(jobs, m.ID)
	m.Updated = time.Now()
	// results.jsonl exists before the manifest does, so that a job whose
	// log is missing is known to have lost it.
	f, err := os.OpenFile(filepath.Join(dir, resultsFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	if err := writeManifest(dir, &m); err != nil {
		return nil, err
	}
	return s.open(ctx, m.ID, false)
}

// Open returns the job for writing: it takes the job directory's lock
// (an *InUseError, matching store.ErrInUse, when another process has it),
// and repairs a torn last line of results.jsonl so that the next record
// starts on a line of its own.
func (s *Store) Open(ctx context.Context, id string) (store.Job, error) {
	return s.open(ctx, id, false)
}

// OpenReadOnly returns the job for reading — status, export — without its
// lock, so it works while a run writes to the job. It sees the records the
// writer has flushed; a line the writer is midway through is ignored like
// a torn one. Its writing methods return store.ErrReadOnly.
func (s *Store) OpenReadOnly(ctx context.Context, id string) (store.Job, error) {
	return s.open(ctx, id, true)
}

// OpenJob is Open or OpenReadOnly returning the concrete *Job.
func (s *Store) OpenJob(ctx context.Context, id string, readOnly bool) (*Job, error) {
	return s.open(ctx, id, readOnly)
}

func (s *Store) open(_ context.Context, id string, readOnly bool) (*Job, error) {
	jobs, err := s.jobsDir()
	if err != nil {
		return nil, err
	}
	if !validID(id) {
		return nil, fmt.Errorf("jsonl: job %q: %w", id, store.ErrNotFound)
	}
	dir := filepath.Join(jobs, id)
	if _, err := os.Stat(filepath.Join(dir, manifestFile)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("jsonl: job %s (no %s in %s): %w", id, manifestFile, dir, store.ErrNotFound)
		}
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	j := &Job{dir: dir, readOnly: readOnly, progress: s.readProgress(id), decoded: s.decodeProgress(id)}
	if !readOnly {
		if j.lock, err = lockJob(dir, id); err != nil {
			return nil, err
		}
	}
	m, err := readManifest(dir)
	if err != nil {
		j.release()
		return nil, err
	}
	j.manifest = m
	if readOnly {
		return j, nil
	}
	if err := j.openResults(); err != nil {
		j.release()
		return nil, err
	}
	j.holdReserve()
	j.flushEvery = cmp.Or(s.FlushEvery, DefaultFlushEvery)
	j.startFlusher(cmp.Or(s.FlushInterval, DefaultFlushInterval))
	return j, nil
}

// List returns the manifests of every job under Home/jobs, oldest first. A
// directory without a manifest (a crash midway through Create) is skipped;
// one whose manifest cannot be read or decoded is left out and named in
// the *store.UnreadableJobsError returned beside the others.
func (s *Store) List(_ context.Context) ([]store.Manifest, error) {
	jobs, err := s.jobsDir()
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(jobs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	var (
		list       []store.Manifest
		unreadable []store.UnreadableJob
	)
	for _, e := range entries {
		if !e.IsDir() || !validID(e.Name()) {
			continue
		}
		m, err := readManifest(filepath.Join(jobs, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			unreadable = append(unreadable, store.UnreadableJob{ID: e.Name(), Err: err})
			continue
		}
		list = append(list, m)
	}
	slices.SortFunc(list, func(a, b store.Manifest) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
	if len(unreadable) > 0 {
		return list, &store.UnreadableJobsError{Jobs: unreadable}
	}
	return list, nil
}

func readManifest(dir string) (store.Manifest, error) {
	var m store.Manifest
	path := filepath.Join(dir, manifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return m, fmt.Errorf("jsonl: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("jsonl: %s: %w", path, err)
	}
	return m, nil
}

// writeManifest replaces dir's manifest atomically: a reader sees the old
// manifest or the new, never a mix, and a crash leaves one of them.
func writeManifest(dir string, m *store.Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("jsonl: encoding manifest: %w", err)
	}
	b = append(b, '\n')
	return store.WriteFileAtomic(filepath.Join(dir, manifestFile), 0o644, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}
