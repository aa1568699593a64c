package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tenaxhq/tenax/store"
)

// Store holds jobs in memory. Its zero value is an empty store ready to
// use; it must not be copied after first use. It is safe for concurrent
// use.
type Store struct {
	mu   sync.Mutex
	jobs map[string]*data
}

var _ store.Store = (*Store)(nil)

// data is one job's state, shared by every Job opened on it.
type data struct {
	mu       sync.Mutex
	manifest store.Manifest
	records  []entry // in append order
	writer   bool    // a Job is open for writing
	notes    map[string][][]byte
	steps    map[int][][]byte // agent steps by idx (store.StepLog)
	controls []store.ControlRequest
}

// entry is one appended record, encoded.
type entry struct {
	idx    int
	failed bool
	line   []byte
}

// Create records a new job and returns it open for writing. An empty
// m.ID becomes "job_YYYYMMDD_HHMMSS" of m.Created, with "_2", "_3", … on
// collision; a zero m.Created becomes now.
func (s *Store) Create(_ context.Context, m store.Manifest) (store.Job, error) {
	if m.Created.IsZero() {
		m.Created = time.Now()
	}
	m.Updated = time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs == nil {
		s.jobs = map[string]*data{}
	}
	if m.ID != "" {
		if _, ok := s.jobs[m.ID]; ok {
			return nil, fmt.Errorf("memory: job %s: %w", m.ID, store.ErrExists)
		}
	} else {
		base := "job_" + m.Created.Format("20060102_150405")
		m.ID = base
		for n := 2; s.jobs[m.ID] != nil; n++ {
			m.ID = base + "_" + strconv.Itoa(n)
		}
	}
	d := &data{manifest: m, writer: true}
	s.jobs[m.ID] = d
	return &Job{d: d}, nil
}

// Open returns the job for writing; store.ErrInUse while another Job holds
// it open for writing.
func (s *Store) Open(_ context.Context, id string) (store.Job, error) {
	d, err := s.get(id)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.writer {
		return nil, fmt.Errorf("memory: job %s: %w", id, store.ErrInUse)
	}
	d.writer = true
	return &Job{d: d}, nil
}

// OpenReadOnly returns the job for reading, even while a writer has it.
func (s *Store) OpenReadOnly(_ context.Context, id string) (store.Job, error) {
	d, err := s.get(id)
	if err != nil {
		return nil, err
	}
	return &Job{d: d, readOnly: true}, nil
}

func (s *Store) get(id string) (*data, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.jobs[id]
	if !ok {
		return nil, fmt.Errorf("memory: job %q: %w", id, store.ErrNotFound)
	}
	return d, nil
}

// List returns every job's manifest, oldest first.
func (s *Store) List(_ context.Context) ([]store.Manifest, error) {
	s.mu.Lock()
	list := make([]store.Manifest, 0, len(s.jobs))
	for _, d := range s.jobs {
		d.mu.Lock()
		list = append(list, d.manifest)
		d.mu.Unlock()
	}
	s.mu.Unlock()
	slices.SortFunc(list, func(a, b store.Manifest) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
	return list, nil
}

// Job is one job of a Store. Appended records are visible to every reader
// at once; Flush has nothing to do. Its methods are safe for concurrent
// use.
type Job struct {
	d        *data
	readOnly bool

	mu     sync.Mutex
	closed bool
}

var (
	_ store.Job        = (*Job)(nil)
	_ store.NoteKeeper = (*Job)(nil)
	_ store.StepLog    = (*Job)(nil)
)

// AppendSteps keeps copies of entries in idx's step log.
func (j *Job) AppendSteps(_ context.Context, idx int, entries ...[]byte) error {
	if err := j.check(true); err != nil {
		return err
	}
	for _, e := range entries {
		if err := store.CheckStep(e); err != nil {
			return err
		}
	}
	j.d.mu.Lock()
	defer j.d.mu.Unlock()
	if j.d.steps == nil {
		j.d.steps = map[int][][]byte{}
	}
	j.d.steps[idx] = appendCopies(j.d.steps[idx], entries...)
	return nil
}

// Steps returns copies of idx's step entries, oldest first.
func (j *Job) Steps(_ context.Context, idx int) ([][]byte, error) {
	if err := j.check(false); err != nil {
		return nil, err
	}
	j.d.mu.Lock()
	defer j.d.mu.Unlock()
	return appendCopies(make([][]byte, 0, len(j.d.steps[idx])), j.d.steps[idx]...), nil
}

// StepsLocation is "memory": the steps live as long as the Store.
func (j *Job) StepsLocation() string { return "memory" }

// AppendNote keeps a copy of note under kind.
func (j *Job) AppendNote(_ context.Context, kind string, note []byte) error {
	if err := j.check(true); err != nil {
		return err
	}
	j.d.mu.Lock()
	defer j.d.mu.Unlock()
	if j.d.notes == nil {
		j.d.notes = map[string][][]byte{}
	}
	j.d.notes[kind] = appendCopies(j.d.notes[kind], note)
	return nil
}

// Notes returns copies of the notes of kind, oldest first.
func (j *Job) Notes(_ context.Context, kind string) ([][]byte, error) {
	if err := j.check(false); err != nil {
		return nil, err
	}
	j.d.mu.Lock()
	defer j.d.mu.Unlock()
	return appendCopies(make([][]byte, 0, len(j.d.notes[kind])), j.d.notes[kind]...), nil
}

// appendCopies appends a copy of each of bs to dst: what the store keeps
// or hands out is never the caller's slice.
func appendCopies(dst [][]byte, bs ...[]byte) [][]byte {
	for _, b := range bs {
		dst = append(dst, append([]byte(nil), b...))
	}
	return dst
}

func (j *Job) check(write bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.closed:
		return store.ErrClosed
	case write && j.readOnly:
		return store.ErrReadOnly
	}
	return nil
}

// Manifest returns the job's manifest as last saved.
func (j *Job) Manifest() store.Manifest {
	j.d.mu.Lock()
	defer j.d.mu.Unlock()
	return j.d.manifest
}

// SetState saves s as the job's state.
func (j *Job) SetState(ctx context.Context, s store.State) error {
	return j.UpdateManifest(ctx, func(m *store.Manifest) { m.State = s })
}

// UpdateManifest applies fn to the manifest; the id and creation time stay.
func (j *Job) UpdateManifest(_ context.Context, fn func(*store.Manifest)) error {
	if err := j.check(true); err != nil {
		return err
	}
	j.d.mu.Lock()
	defer j.d.mu.Unlock()
	m := j.d.manifest
	id, created := m.ID, m.Created
	fn(&m)
	m.ID, m.Created, m.Updated = id, created, time.Now()
	j.d.manifest = m
	return nil
}

// Append encodes recs and keeps them; a batch holding a record that cannot
// be encoded is refused whole.
func (j *Job) Append(_ context.Context, recs ...store.Record) error {
	if err := j.check(true); err != nil {
		return err
	}
	batch := make([]entry, len(recs))
	for i := range recs {
		line, err := recs[i].AppendJSON(nil)
		if err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		batch[i] = entry{idx: recs[i].Idx, failed: recs[i].Failed(), line: line}
	}
	j.d.mu.Lock()
	j.d.records = append(j.d.records, batch...)
	j.d.mu.Unlock()
	return nil
}

// Flush returns at once: appended records are already kept.
func (j *Job) Flush(context.Context) error { return j.check(true) }

// latest returns the latest entry of every idx, in idx order, when keep
// accepts it.
func (j *Job) latest(keep func(entry) bool) []entry {
	j.d.mu.Lock()
	byIdx := map[int]entry{}
	for _, e := range j.d.records {
		byIdx[e.idx] = e
	}
	j.d.mu.Unlock()
	out := make([]entry, 0, len(byIdx))
	for _, e := range byIdx {
		if keep(e) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b entry) int { return cmp.Compare(a.idx, b.idx) })
	return out
}

// Outcomes returns the latest outcome of every idx.
func (j *Job) Outcomes(_ context.Context) (store.Outcomes, error) {
	if err := j.check(false); err != nil {
		return nil, err
	}
	var o store.Outcomes
	j.d.mu.Lock()
	defer j.d.mu.Unlock()
	for _, e := range j.d.records {
		out := store.Succeeded
		if e.failed {
			out = store.Failed
		}
		o.Set(e.idx, out)
	}
	return o, nil
}

// Scan calls fn with the latest record of every idx, in idx order, each
// decoded afresh.
func (j *Job) Scan(ctx context.Context, fn func(store.Record) error) error {
	return j.scan(ctx, func(entry) bool { return true }, fn)
}

// Failures calls fn with the latest record of every idx whose latest
// record failed, in idx order.
func (j *Job) Failures(ctx context.Context, fn func(store.Record) error) error {
	return j.scan(ctx, func(e entry) bool { return e.failed }, fn)
}

func (j *Job) scan(ctx context.Context, keep func(entry) bool, fn func(store.Record) error) error {
	if err := j.check(false); err != nil {
		return err
	}
	for _, e := range j.latest(keep) {
		if err := ctx.Err(); err != nil {
			return err
		}
		var r store.Record
		if err := json.Unmarshal(e.line, &r); err != nil {
			return fmt.Errorf("memory: decoding the record of idx %d: %w", e.idx, err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// Log calls fn with every record of the job, oldest first.
func (j *Job) Log(ctx context.Context, fn func(store.Record) error) error {
	if err := j.check(false); err != nil {
		return err
	}
	j.d.mu.Lock()
	lines := make([][]byte, len(j.d.records))
	for i, e := range j.d.records {
		lines[i] = e.line
	}
	j.d.mu.Unlock()
	for _, line := range lines {
		if err := ctx.Err(); err != nil {
			return err
		}
		var r store.Record
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("memory: decoding a record: %w", err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// History calls fn with every record of idx, oldest first.
func (j *Job) History(ctx context.Context, idx int, fn func(store.Record) error) error {
	if err := j.check(false); err != nil {
		return err
	}
	j.d.mu.Lock()
	var lines [][]byte
	for _, e := range j.d.records {
		if e.idx == idx {
			lines = append(lines, e.line)
		}
	}
	j.d.mu.Unlock()
	for _, line := range lines {
		if err := ctx.Err(); err != nil {
			return err
		}
		var r store.Record
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("memory: decoding a record of idx %d: %w", idx, err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// Finish checks the job is writable: there is nothing to write.
func (j *Job) Finish(context.Context) error { return j.check(true) }

// Close releases the job: a writer lets the next Open have it. Closing
// twice is harmless.
func (j *Job) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	if !j.readOnly {
		j.d.mu.Lock()
		j.d.writer = false
		j.d.mu.Unlock()
	}
	return nil
}
