package jsonl

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tenaxhq/tenax/store"
)

// flushBytes bounds the encoded records a job holds before writing them,
// whatever FlushEvery says, so huge outputs do not pile up in memory.
const flushBytes = 4 << 20

// Job is one job directory. Open for writing, it holds the directory's
// lock and appends to results.jsonl through an in-memory buffer that is
// written and fsynced every FlushEvery records, every FlushInterval, on
// Flush and on Close. Its methods are safe for concurrent use.
//
// A write or fsync that fails is kept as the job's error: every later
// Append and Flush returns it (the path and the OS error, such as "no
// space left on device"), Append refusing its records, until a Flush
// manages to write what was accepted before. So a record Append took is
// either written by a later Flush or reported lost by its error, and a
// record Append refused is not kept at all.
type Job struct {
	dir      string
	readOnly bool
	lock     *os.File

	// mu guards the fields below it; Append holds it only to encode.
	mu         sync.Mutex
	manifest   store.Manifest
	pending    []byte       // encoded records not yet written
	pendingIdx []indexEntry // their index entries, start relative to pending
	spare      []byte       // the buffer the last write emptied, for reuse
	spareIdx   []indexEntry
	unsynced   int           // records appended since the last fsync
	err        error         // the last failed write, until a write succeeds
	appended   bool          // a record was appended since the job was opened
	kept       *keptOutcomes // what the last Outcomes read, for the next (keepOutcomes)
	flushEvery int
	closed     bool

	// writeMu serializes writes to results.jsonl, keeping them in append
	// order, and guards the fields below it. Taken before mu, never after.
	writeMu   sync.Mutex
	results   *os.File
	identity  os.FileInfo // results.jsonl as opened, to notice it replaced or removed
	size      int64       // bytes of results.jsonl known to hold whole records
	index     *os.File    // results.idx open for appending; nil once it falls out of step
	indexSize int64
	indexBuf  []byte

	manifestMu sync.Mutex // serializes manifest writes

	// stepsMu guards stepLog, steps.jsonl once an agent used it.
	stepsMu sync.Mutex
	stepLog *stepLog

	// progress hears how far a long read of the log is (Store.Logger);
	// nil says nothing. decoded hears how far a Scan's decoding of the
	// latest records is, the longer part of a status or an export of a
	// big job (15 s of a million records' status, and silent).
	progress func(read, total int64)
	decoded  func(done, total int64)
	// decodedEvery is how often decoded hears, progressEvery when 0.
	decodedEvery time.Duration

	stop chan struct{}
	done chan struct{}
	// kick asks the flusher for a group commit: FlushEvery records wait.
	kick chan struct{}
}

var _ store.Job = (*Job)(nil)

// Dir returns the job's directory: manifest.json, results.jsonl,
// failures.jsonl and the lock file.
func (j *Job) Dir() string { return j.dir }

func (j *Job) resultsPath() string { return filepath.Join(j.dir, resultsFile) }

// openResults opens results.jsonl for appending and repairs its tail.
func (j *Job) openResults() error {
	_, statErr := os.Stat(j.resultsPath())
	f, err := os.OpenFile(j.resultsPath(), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		// A new file's directory entry is durable only once the directory
		// is synced: without it, records fsynced into the file could vanish
		// with the file itself on a power loss.
		if err := store.SyncDir(j.dir); err != nil {
			f.Close()
			return fmt.Errorf("jsonl: %w", err)
		}
	}
	size, err := repairTail(f, j.resultsPath())
	if err != nil {
		f.Close()
		return err
	}
	if j.identity, err = f.Stat(); err != nil {
		f.Close()
		return fmt.Errorf("jsonl: %w", err)
	}
	j.results, j.size = f, size
	// The index is a cache: a job whose index cannot be written runs on,
	// and its readers complete what the index lacks from the log.
	// A rebuilt index held every line of the log: their outcomes are what
	// the first Outcomes would read back from it (keepOutcomes).
	var all store.Outcomes
	seen := func(e indexEntry) { all.Set(e.idx, outcomeOf(e.failed)) }
	if idx, n, rebuilt, err := openIndex(context.Background(), j.dir, f, size, seen, j.progress); err == nil {
		j.index, j.indexSize = idx, n
		if rebuilt {
			j.mu.Lock()
			j.kept = &keptOutcomes{size: size, o: all}
			j.mu.Unlock()
		}
	}
	return nil
}

// repairTail makes the file end with a newline, so the next record starts
// a line of its own, without losing a complete record: a last line that
// is a whole record missing only its newline gets one; a torn line (a
// crash mid-write) is cut off. It returns the file's new size.
func repairTail(f *os.File, path string) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("jsonl: %w", err)
	}
	size := fi.Size()
	tail := size
	buf := make([]byte, 64<<10)
	for tail > 0 {
		n := min(int64(len(buf)), tail)
		chunk := buf[:n]
		if _, err := f.ReadAt(chunk, tail-n); err != nil {
			return 0, fmt.Errorf("jsonl: reading %s: %w", path, err)
		}
		if k := lastNewline(chunk); k >= 0 {
			tail = tail - n + int64(k) + 1
			break
		}
		tail -= n
	}
	if tail == size {
		return size, nil
	}
	lr := newLogReader(io.NewSectionReader(f, tail, size-tail), path, tail)
	line, err := lr.next()
	switch {
	case err == nil && line.noNewline:
		if _, err := f.Write([]byte{'\n'}); err != nil {
			return 0, fmt.Errorf("jsonl: repairing %s: %w", path, err)
		}
		size++
	case errors.Is(err, io.EOF) && lr.tornAt >= 0:
		if err := f.Truncate(lr.tornAt); err != nil {
			return 0, fmt.Errorf("jsonl: cutting the torn last line of %s: %w", path, err)
		}
		size = lr.tornAt
	case errors.Is(err, io.EOF):
		// Blank space after the last newline: harmless.
		return size, nil
	default:
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("jsonl: %w", err)
	}
	return size, nil
}

func lastNewline(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return i
		}
	}
	return -1
}

// startFlusher starts the goroutine that flushes every interval; Close
// stops it.
func (j *Job) startFlusher(interval time.Duration) {
	j.stop, j.done, j.kick = make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
	go func() {
		defer close(j.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-j.stop:
				return
			case <-t.C:
				// A failed write keeps its records pending; the next
				// flush retries them and Flush reports the error.
				_ = j.flush(false)
			case <-j.kick:
				_ = j.flush(true)
			}
		}
	}()
}

// Manifest returns the job's manifest as last saved.
func (j *Job) Manifest() store.Manifest {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.manifest
}

// SetState saves s as the job's state.
func (j *Job) SetState(ctx context.Context, s store.State) error {
	return j.UpdateManifest(ctx, func(m *store.Manifest) { m.State = s })
}

// UpdateManifest applies fn to a copy of the manifest and replaces
// manifest.json with the result atomically.
func (j *Job) UpdateManifest(_ context.Context, fn func(*store.Manifest)) error {
	j.manifestMu.Lock()
	defer j.manifestMu.Unlock()
	j.mu.Lock()
	if err := j.writableLocked(); err != nil {
		j.mu.Unlock()
		return err
	}
	m := j.manifest
	j.mu.Unlock()
	id, created := m.ID, m.Created
	fn(&m)
	m.ID, m.Created, m.Updated = id, created, time.Now()
	err := writeManifest(j.dir, &m)
	if noSpace(err) {
		// Held so that the log's next flush, retrying the records the
		// full disk refused, cannot take the space the reserve leaves.
		j.writeMu.Lock()
		if j.freeReserve() {
			err = writeManifest(j.dir, &m)
		}
		j.writeMu.Unlock()
	}
	if err != nil {
		return err
	}
	j.mu.Lock()
	j.manifest = m
	j.mu.Unlock()
	return nil
}

func (j *Job) writableLocked() error {
	if j.closed {
		return store.ErrClosed
	}
	if j.readOnly {
		return store.ErrReadOnly
	}
	return nil
}

// Append encodes recs into the job's buffer; they reach the file within
// FlushEvery records or FlushInterval, and are durable once Flush returns.
// It either takes every record of recs or none: a batch holding a record
// that cannot be encoded is refused whole, and so is every batch after a
// write failed (the error names the file and the OS error) until a Flush
// succeeds. Append does not give up when ctx is canceled: a finished
// item's record is worth keeping through an interruption.
func (j *Job) Append(_ context.Context, recs ...store.Record) error {
	j.mu.Lock()
	for len(j.pending) >= flushBytes && j.err == nil && !j.closed {
		// The disk is slower than the appends: write what waits before
		// taking more, which holds this caller back until it catches up.
		j.mu.Unlock()
		if err := j.flush(true); err != nil {
			return err
		}
		j.mu.Lock()
	}
	if err := j.writableLocked(); err != nil {
		j.mu.Unlock()
		return err
	}
	if j.err != nil {
		err := j.err
		j.mu.Unlock()
		return err
	}
	before, beforeIdx := len(j.pending), len(j.pendingIdx)
	for i := range recs {
		start := len(j.pending)
		var err error
		if j.pending, err = recs[i].AppendJSON(j.pending); err != nil {
			j.pending, j.pendingIdx = j.pending[:before], j.pendingIdx[:beforeIdx]
			j.mu.Unlock()
			return fmt.Errorf("jsonl: %w", err)
		}
		j.pending = append(j.pending, '\n')
		j.pendingIdx = append(j.pendingIdx, indexEntry{
			start: int64(start), length: uint32(len(j.pending) - start), idx: recs[i].Idx, failed: recs[i].Failed(),
		})
	}
	j.unsynced += len(recs)
	j.appended = j.appended || len(recs) > 0
	due := j.unsynced >= j.flushEvery || len(j.pending) >= flushBytes
	j.mu.Unlock()
	if due {
		// Group commit: the flusher writes and fsyncs in the background
		// while appends go on into the other buffer, so no caller waits
		// for the disk on the hot path.
		select {
		case j.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// Flush writes every appended record to results.jsonl and fsyncs it.
func (j *Job) Flush(_ context.Context) error {
	j.mu.Lock()
	err := j.writableLocked()
	j.mu.Unlock()
	if err != nil {
		return err
	}
	return j.flush(true)
}

// flush writes the pending records and fsyncs. Appends go on into the
// other buffer meanwhile. With wait false it returns at once when another
// flush is under way, as that one or the next will take the records.
func (j *Job) flush(wait bool) error {
	if wait {
		j.writeMu.Lock()
	} else if !j.writeMu.TryLock() {
		return nil
	}
	defer j.writeMu.Unlock()
	if j.results == nil {
		return store.ErrClosed
	}
	j.mu.Lock()
	buf, entries, n := j.pending, j.pendingIdx, j.unsynced
	if n == 0 && len(buf) == 0 {
		j.mu.Unlock()
		return nil
	}
	j.pending, j.pendingIdx, j.spare, j.spareIdx, j.unsynced = j.spare[:0], j.spareIdx[:0], nil, nil, 0
	j.mu.Unlock()

	err := j.checkIdentity()
	if err == nil {
		if _, err = j.results.Write(buf); err == nil {
			err = j.results.Sync()
		}
		if err != nil {
			// Cut whatever part of buf reached the file, so the log never
			// holds half a record.
			_ = j.results.Truncate(j.size)
			err = fmt.Errorf("jsonl: writing %s: %w", j.resultsPath(), err)
		}
	}
	if err != nil {
		// Keep buf for the next flush, before what was appended since.
		j.mu.Lock()
		j.pending = append(buf, j.pending...)
		j.pendingIdx = append(shift(entries, 0), shift(j.pendingIdx, int64(len(buf)))...)
		j.unsynced += n
		j.err = err
		j.mu.Unlock()
		return err
	}
	j.writeIndex(entries)
	j.size += int64(len(buf))
	j.mu.Lock()
	j.spare, j.spareIdx, j.err = buf[:0], entries[:0], nil
	j.mu.Unlock()
	return nil
}

// shift moves entries' starts by d, in place.
func shift(entries []indexEntry, d int64) []indexEntry {
	for i := range entries {
		entries[i].start += d
	}
	return entries
}

// checkIdentity reports a job directory removed or replaced during the
// run: an open file takes writes after its name is gone, so without this
// check the records would be "saved" where nobody can find them.
func (j *Job) checkIdentity() error {
	fi, err := os.Stat(j.resultsPath())
	if err == nil && os.SameFile(fi, j.identity) {
		return nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("jsonl: checking %s: %w", j.resultsPath(), err)
	}
	return fmt.Errorf("jsonl: %s was removed or replaced while the job ran; its records cannot be saved there: job %s: %w",
		j.resultsPath(), filepath.Base(j.dir), store.ErrNotFound)
}

// writeIndex adds the entries of records just written at j.size to
// results.idx. An index that cannot be written is cut back to its last
// whole entry and left behind: readers complete it from the log.
func (j *Job) writeIndex(entries []indexEntry) {
	if j.index == nil {
		return
	}
	if n := len(entries); n > 0 && j.size+entries[n-1].end() >= maxIndexedLog {
		_ = j.index.Close()
		j.index = nil
		return
	}
	b := j.indexBuf[:0]
	for _, e := range entries {
		e.start += j.size
		b = appendEntry(b, e)
	}
	j.indexBuf = b
	if _, err := j.index.Write(b); err != nil {
		_ = j.index.Truncate(j.indexSize)
		_ = j.index.Close()
		j.index = nil
		return
	}
	j.indexSize += int64(len(b))
}

// snapshot flushes a writer's records and opens results.jsonl for
// reading, returning the size up to which it holds whole records (for a
// read-only job, whatever the file holds now).
func (j *Job) snapshot(ctx context.Context) (*os.File, int64, error) {
	j.mu.Lock()
	closed, readOnly := j.closed, j.readOnly
	j.mu.Unlock()
	if closed {
		return nil, 0, store.ErrClosed
	}
	if !readOnly {
		if err := j.Flush(ctx); err != nil {
			return nil, 0, err
		}
	}
	f, err := os.Open(j.resultsPath())
	if errors.Is(err, fs.ErrNotExist) {
		// Create makes results.jsonl before the manifest: a job without
		// it lost its records, which is not the same as having none.
		return nil, 0, fmt.Errorf("jsonl: %s is missing: the records of job %s were removed: %w",
			j.resultsPath(), filepath.Base(j.dir), store.ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("jsonl: %w", err)
	}
	if !readOnly {
		j.writeMu.Lock()
		size := j.size
		j.writeMu.Unlock()
		return f, size, nil
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("jsonl: %w", err)
	}
	return f, fi.Size(), nil
}

// ctxCheckEvery is how many lines a read goes between looks at its context.
const ctxCheckEvery = 1 << 14

// Outcomes reads the latest outcome of every idx from results.idx, sixteen
// bytes per record, reading from the log only the lines the index lacks
// (all of them when it is missing or does not match the log). It needs one
// byte per item and fixed buffers, however large the outputs.
//
// When the job's writes fail (a full disk), Outcomes reads the records
// written before the failure and returns them with the error: after a
// storage failure the summary must count what the log holds, not report
// every item pending.
func (j *Job) Outcomes(ctx context.Context) (store.Outcomes, error) {
	f, size, err := j.snapshot(ctx)
	if err != nil {
		var werr error
		if f, size, werr = j.written(); werr != nil {
			return nil, err
		}
	}
	defer f.Close()
	g := j.idxGuard()
	if o, ok := j.outcomesOf(f, size, g.items, err); ok {
		return o, nil
	}
	o := store.Outcomes{}
	_, rerr := walkLog(ctx, j.dir, f, size,
		func(e indexEntry) {
			if g.fits(e) {
				o.Set(e.idx, outcomeOf(e.failed))
			}
		},
		func() { o, g.refused = o[:0], false }, nil, j.progress)
	if rerr == nil {
		rerr = g.err()
	}
	if rerr != nil {
		return nil, cmp.Or(err, rerr)
	}
	if err == nil {
		j.keepOutcomes(size, o)
	}
	return o, err
}

// keptOutcomes are the outcomes a writer's last Outcomes read (or its
// index's rebuild), and of what: the log's first size bytes. They hold
// for a job of any number of items past their highest idx, len(o)-1: of
// fewer, a line is refused (idxGuard).
type keptOutcomes struct {
	size int64
	o    store.Outcomes
}

// keepOutcomes keeps what a writer's Outcomes read of the log's first
// size bytes: the job's lock keeps other writers out, so until this Job
// writes a record those bytes, and their outcomes, stay what they are. A
// resume reads the outcomes before and after its run; one that runs
// nothing read the whole index twice (a tenth of a warm first resume's
// wall time; docs/benchmarks.md, issue 38).
func (j *Job) keepOutcomes(size int64, o store.Outcomes) {
	if j.readOnly {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.kept = &keptOutcomes{size: size, o: slices.Clone(o)}
}

// outcomesOf returns a copy of the kept outcomes when they are of the log
// f (the file this Job writes, not one put in its place) up to size, of a
// job of items items, and its snapshot did not fail (err).
func (j *Job) outcomesOf(f *os.File, size int64, items int, err error) (store.Outcomes, bool) {
	j.mu.Lock()
	kept := j.kept
	j.mu.Unlock()
	if err != nil || kept == nil || kept.size != size || items > 0 && len(kept.o) > items {
		return nil, false
	}
	fi, serr := f.Stat()
	j.writeMu.Lock()
	same := serr == nil && j.identity != nil && os.SameFile(fi, j.identity)
	j.writeMu.Unlock()
	if !same {
		return nil, false
	}
	return slices.Clone(kept.o), true
}

// idxGuard refuses a line whose _idx is past the job's items: a record
// appended by hand or by another tool, which would count as an item the
// input does not have ("1001 succeeded" of 1,000).
type idxGuard struct {
	j     *Job
	items int
	bad   indexEntry // the first line refused, when refused
	// refused says a line was refused.
	refused bool
}

func (j *Job) idxGuard() *idxGuard {
	j.mu.Lock()
	defer j.mu.Unlock()
	return &idxGuard{j: j, items: j.manifest.Items}
}

// fits reports whether e's idx is one of the job's items.
func (g *idxGuard) fits(e indexEntry) bool {
	// A manifest without an item count (a job made by a program, not
	// from an input) bounds nothing.
	if e.idx < g.items || g.items == 0 {
		return true
	}
	if !g.refused {
		// A reader opened before a --limit resume read further sees the
		// item count of then: read the manifest again before refusing.
		if m, err := readManifest(g.j.dir); err == nil {
			g.items = max(g.items, m.Items)
		}
		if e.idx < g.items {
			return true
		}
		g.bad, g.refused = e, true
	}
	return false
}

// err is the *CorruptError for the first line refused, nil when none was.
func (g *idxGuard) err() error {
	if !g.refused {
		return nil
	}
	return &CorruptError{Path: g.j.resultsPath(), Offset: g.bad.start,
		Reason: fmt.Sprintf("its _idx %d is past the job's last item (%d items, idx 0 to %d)", g.bad.idx, g.items, g.items-1)}
}

// written opens results.jsonl of a writer whose last write failed, and
// returns the size up to which it holds the records written before.
func (j *Job) written() (*os.File, int64, error) {
	j.mu.Lock()
	failed := j.err != nil && !j.readOnly && !j.closed
	j.mu.Unlock()
	if !failed {
		return nil, 0, errors.New("jsonl: the job's writes have not failed")
	}
	j.writeMu.Lock()
	defer j.writeMu.Unlock()
	if err := j.checkIdentity(); err != nil {
		return nil, 0, err
	}
	f, err := os.Open(j.resultsPath())
	if err != nil {
		return nil, 0, fmt.Errorf("jsonl: %w", err)
	}
	return f, j.size, nil
}

func outcomeOf(failed bool) store.Outcome {
	if failed {
		return store.Failed
	}
	return store.Succeeded
}

// Scan calls fn with the latest record of every idx, in idx order. A
// first pass notes the offset of each idx's latest line (eight bytes per
// item); the second reads and decodes those lines one at a time.
func (j *Job) Scan(ctx context.Context, fn func(store.Record) error) error {
	return j.scan(ctx, false, fn)
}

// Failures calls fn with the latest record of every idx whose latest
// record failed, in idx order.
func (j *Job) Failures(ctx context.Context, fn func(store.Record) error) error {
	return j.scan(ctx, true, fn)
}

func (j *Job) scan(ctx context.Context, onlyFailed bool, fn func(store.Record) error) error {
	path := j.resultsPath()
	var rec store.Record
	return j.scanLines(ctx, onlyFailed, func(idx int, off int64, line []byte) error {
		if err := decodeRecord(path, 0, off, line, &rec); err != nil {
			return err
		}
		if rec.Idx != idx {
			return idxMismatch(path, off, rec.Idx, idx)
		}
		return fn(rec)
	})
}

// scanLines calls fn with the latest line of every idx (of every failed
// idx when onlyFailed), in idx order, and the line's offset. The line is
// valid only during the call.
func (j *Job) scanLines(ctx context.Context, onlyFailed bool, fn func(idx int, off int64, line []byte) error) error {
	f, size, err := j.snapshot(ctx)
	if err != nil {
		return err
	}
	defer f.Close()
	// offsets[idx] is the start of idx's latest line plus one; 0 for none.
	// lengths[idx] is its length, to check the line read is the one the
	// index named.
	var (
		offsets []int64
		lengths []uint32
	)
	g := j.idxGuard()
	fromLog, err := walkLog(ctx, j.dir, f, size, func(e indexEntry) {
		if !g.fits(e) {
			return
		}
		if onlyFailed && !e.failed {
			if e.idx < len(offsets) {
				offsets[e.idx] = 0
			}
			return
		}
		if e.idx >= len(offsets) {
			offsets = append(offsets, make([]int64, e.idx+1-len(offsets))...)
			lengths = append(lengths, make([]uint32, e.idx+1-len(lengths))...)
		}
		offsets[e.idx], lengths[e.idx] = e.start+1, e.length
	}, func() { offsets, lengths, g.refused = offsets[:0], lengths[:0], false }, nil, j.progress)
	if err == nil {
		err = g.err()
	}
	if err != nil {
		return err
	}
	return j.readLatest(ctx, f, size, offsets, lengths, fromLog, fn)
}

// readLatest is scanLines' second pass: it reads the line at each offset
// (the start of idx's latest line plus one, 0 for none) in idx order,
// checks it is the line of that length and idx the index named (unless
// fromLog: the offsets came from the log itself), and calls fn with it.
func (j *Job) readLatest(ctx context.Context, f *os.File, size int64, offsets []int64, lengths []uint32, fromLog bool,
	fn func(idx int, off int64, line []byte) error) error {
	path := j.resultsPath()
	var (
		br         = bufio.NewReaderSize(nil, 64<<10)
		at   int64 = -1 // offset br reads from next, -1 when unset
		long []byte
	)
	report := newProgressReportEvery(j.decoded, cmp.Or(j.decodedEvery, progressEvery))
	defer func() { report.end(int64(len(offsets)), int64(len(offsets))) }()
	for idx, off := range offsets {
		if off == 0 {
			continue
		}
		off--
		if err := ctx.Err(); err != nil {
			return err
		}
		if idx%1024 == 0 {
			report.tick(int64(idx), int64(len(offsets)))
		}
		if off != at {
			br.Reset(io.NewSectionReader(f, off, size-off))
			at = off
		}
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("jsonl: reading %s: %w", path, err)
		}
		at += int64(len(line))
		if !fromLog && (len(line) != int(lengths[idx]) || !idxPrefixFits(line, idx)) {
			// The index passed its checks but names another line here:
			// the index is wrong, not the log line, which must not be
			// blamed (removing it would lose a good record).
			return fmt.Errorf("jsonl: %s does not match %s at byte %d (it names a line of idx %d there): remove %s, which tenax rebuilds from the log, and run tenax again",
				filepath.Join(j.dir, indexFile), path, off, idx, filepath.Join(j.dir, indexFile))
		}
		if err := fn(idx, off, line); err != nil {
			return err
		}
	}
	return nil
}

// History calls fn with every record of idx, oldest first: the log's
// lines of idx, found through its index (or, without one, a pass over
// the log), each read and decoded.
func (j *Job) History(ctx context.Context, idx int, fn func(store.Record) error) error {
	f, size, err := j.snapshot(ctx)
	if err != nil {
		return err
	}
	defer f.Close()
	var at []indexEntry
	if _, err := walkLog(ctx, j.dir, f, size, func(e indexEntry) {
		if e.idx == idx {
			at = append(at, e)
		}
	}, func() { at = at[:0] }, nil, j.progress); err != nil {
		return err
	}
	path := j.resultsPath()
	for _, e := range at {
		line := make([]byte, e.length)
		if _, err := f.ReadAt(line, e.start); err != nil {
			return fmt.Errorf("jsonl: reading %s: %w", path, err)
		}
		var rec store.Record
		if err := decodeRecord(path, 0, e.start, line, &rec); err != nil {
			return err
		}
		if rec.Idx != idx {
			return idxMismatch(path, e.start, rec.Idx, idx)
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return nil
}

// Log calls fn with every record of the log, in the order they were
// written: one sequential pass over results.jsonl, each line decoded as
// it is read. A last line without its newline is a write under way (or
// torn by a crash, which the next writer cuts): it is left out.
func (j *Job) Log(ctx context.Context, fn func(store.Record) error) error {
	f, size, err := j.snapshot(ctx)
	if err != nil {
		return err
	}
	defer f.Close()
	path := j.resultsPath()
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 64<<10)
	var (
		off  int64
		long []byte
	)
	for n := 0; ; n++ {
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("jsonl: reading %s: %w", path, err)
		}
		start := off
		off += int64(len(line))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec store.Record
		if err := decodeRecord(path, n+1, start, line, &rec); err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
}

// idxPrefixFits reports whether line, when it starts as tenax writes a
// record ({"_idx":N,…), starts with idx; a line written otherwise fits.
func idxPrefixFits(line []byte, idx int) bool {
	rest, ok := bytes.CutPrefix(line, []byte(`{"_idx":`))
	if !ok {
		return true
	}
	got, digits := 0, 0
	for _, c := range rest {
		if c < '0' || c > '9' || digits > 10 {
			break
		}
		got, digits = got*10+int(c-'0'), digits+1
	}
	return digits == 0 || digits > 10 || got == idx
}

// Finish flushes and writes failures.jsonl: the latest record of every
// failed idx, in idx order, replacing the file atomically. The lines are
// copied from results.jsonl as they are (tenax writes every record the same
// way); a line written otherwise, by hand, is decoded and encoded again.
// When this Job appended nothing and failures.from says failures.jsonl was
// made from the log as it is, the file is up to date and Finish only
// flushes: a resume with nothing to run does not rewrite it, also in a job
// directory copied without its file times.
func (j *Job) Finish(ctx context.Context) error {
	if err := j.Flush(ctx); err != nil {
		return err
	}
	j.mu.Lock()
	appended := j.appended
	j.mu.Unlock()
	f, size, err := j.snapshot(ctx)
	if err != nil {
		return err
	}
	defer f.Close()
	if !appended && j.failuresFresh(f, size) {
		return nil
	}
	src, err := logSource(f, size)
	if err != nil {
		return err
	}
	err = store.WriteFileAtomic(filepath.Join(j.dir, failuresFile), 0o644, func(w io.Writer) error {
		cw := &countingWriter{w: w}
		bw := bufio.NewWriterSize(cw, 64<<10)
		n, err := j.writeFailures(ctx, bw)
		if err == nil {
			err = bw.Flush()
		}
		src.FailuresBytes, src.Failures = cw.n, n
		return err
	})
	if err != nil {
		return err
	}
	// Without failures.from the next Finish rewrites the file once more,
	// which costs time, not correctness: its error is not the run's.
	_ = j.writeFailuresFrom(src)
	return nil
}

// writeFailures writes the latest line of every failed idx to w and
// returns how many it wrote.
func (j *Job) writeFailures(ctx context.Context, w io.Writer) (int, error) {
	path := j.resultsPath()
	var (
		enc []byte
		n   int
	)
	err := j.scanLines(ctx, true, func(idx int, off int64, line []byte) error {
		n++
		// A line the fast path is sure of is a record as tenax writes
		// it: copied as it is. Any other is judged by the rule and, a
		// record, encoded again.
		if k := len(line) - 1; k >= 0 && line[k] == '\n' {
			if got, _, ok := fastLine(line[:k]); ok && got == idx {
				_, err := w.Write(line)
				return err
			}
		}
		var rec store.Record
		if err := decodeRecord(path, 0, off, line, &rec); err != nil {
			return err
		}
		if rec.Idx != idx {
			return idxMismatch(path, off, rec.Idx, idx)
		}
		var err error
		if enc, err = rec.AppendJSON(enc[:0]); err != nil {
			return err
		}
		_, err = w.Write(append(enc, '\n'))
		return err
	})
	return n, err
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Close flushes, stops the flusher and releases the job's lock. Closing
// twice is harmless.
func (j *Job) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	// From here on Append and the other methods see ErrClosed; what was
	// appended before is flushed below.
	j.closed = true
	j.mu.Unlock()
	if j.readOnly {
		return nil
	}
	close(j.stop)
	<-j.done
	err := j.flush(true)
	if serr := j.closeSteps(); err == nil {
		err = serr
	}
	j.writeMu.Lock()
	if cerr := j.results.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("jsonl: %w", cerr)
	}
	j.results = nil
	if j.index != nil {
		_ = j.index.Close()
		j.index = nil
	}
	j.writeMu.Unlock()
	j.release()
	return err
}

// release drops the lock of a job opened for writing.
func (j *Job) release() {
	if j.lock != nil {
		j.freeReserve()
		// The holder's name goes before the lock: a lock file that names a
		// live process means that process holds the job (see Holder).
		_ = j.lock.Truncate(0)
		_ = j.lock.Close()
		j.lock = nil
	}
}
