package jsonl

import (
	"io"
	"os"
	"time"
)

// A long read of the log (building results.idx from a log without one:
// 2.2 GB for a million records of 2 KB) reads it front to back once, and
// tells the kernel so, as `cat` cannot: the whole stretch is sequential
// (readahead doubles), the next window is wanted now (its reads are
// queued while the scanner works on this one), and what is behind will not
// be read again (its pages are dropped, so the read neither fills the page
// cache with a log nobody rereads nor pushes out what others use; a cache
// under pressure dropped readahead before it was used, and one such
// resume read the device 33 times over). Only a stretch of at least
// seqHintFrom gets the hints: a short one is the tail a writer's index
// lacks.
const (
	seqHintFrom = 16 << 20
	// seqWindow is how far ahead of the reader the kernel is asked to
	// read, and how much is read before the pages behind are dropped.
	seqWindow = 16 << 20
	// seqBuf is the size of one read.
	seqBuf = 1 << 20
	// progressEvery is how often a long read says how far it is.
	progressEvery = 5 * time.Second
)

// seqReader reads f from off to end in order, hinting the kernel as above
// for a long stretch and reporting progress.
type seqReader struct {
	f                  *os.File
	start, off, end    int64
	hint               bool
	ahead, dropped     int64 // WILLNEED asked up to ahead; DONTNEED given below dropped
	progress           func(read, total int64)
	nextReport, begun  time.Time
	reportedAtLeastOne bool
}

// newSeqReader reads f from off to end. progress, if not nil, is called
// every progressEvery with the bytes read so far and the stretch's length,
// and once at the end when it was called before.
func newSeqReader(f *os.File, off, end int64, progress func(read, total int64)) *seqReader {
	now := time.Now()
	r := &seqReader{f: f, start: off, off: off, end: end, ahead: off, dropped: off,
		hint: end-off >= seqHintFrom, progress: progress, begun: now, nextReport: now.Add(progressEvery)}
	if r.hint {
		adviseSequential(f, off, end-off)
	}
	return r
}

func (r *seqReader) Read(p []byte) (int, error) {
	if r.off >= r.end {
		r.finish()
		return 0, io.EOF
	}
	if r.hint && r.ahead < r.end && r.ahead-r.off < seqWindow {
		// Keep one window queued ahead of the reader.
		n := min(seqWindow, r.end-r.ahead)
		adviseWillNeed(r.f, r.ahead, n)
		r.ahead += n
	}
	p = p[:min(int64(len(p)), r.end-r.off)]
	n, err := r.f.ReadAt(p, r.off)
	r.off += int64(n)
	if r.hint && r.off-r.dropped >= seqWindow {
		adviseDontNeed(r.f, r.dropped, r.off-r.dropped)
		r.dropped = r.off
	}
	if r.progress != nil {
		if now := time.Now(); now.After(r.nextReport) {
			r.progress(r.off-r.start, r.end-r.start)
			r.reportedAtLeastOne = true
			r.nextReport = now.Add(progressEvery)
		}
	}
	if err == io.EOF && r.off < r.end {
		// The file is shorter than it was: a reader of a stretch sees the
		// end early, as io.SectionReader does.
		r.end = r.off
	}
	if n > 0 {
		return n, nil
	}
	if err == io.EOF {
		r.finish()
	}
	return n, err
}

// finish drops what is left behind and reports the end of a read that
// reported progress before.
func (r *seqReader) finish() {
	if r.hint && r.off > r.dropped {
		adviseDontNeed(r.f, r.dropped, r.off-r.dropped)
		r.dropped = r.off
	}
	if r.progress != nil && r.reportedAtLeastOne {
		r.progress(r.off-r.start, r.end-r.start)
		r.reportedAtLeastOne = false
	}
}
