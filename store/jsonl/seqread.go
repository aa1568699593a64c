package jsonl

import (
	"io"
	"os"
	"time"
)

// A long read of the log (building results.idx from a log without one:
// 2.2 GB for a million records of 2 KB) reads it front to back once, and
// tells the kernel so, as `cat` cannot: the whole stretch is sequential
// (readahead doubles, and runs ahead of the reader on its own), and what
// is behind will not be read again (its pages are dropped, so the read
// neither fills the page cache with a log nobody rereads nor pushes out
// what others use; a cache under pressure dropped readahead before it was
// used, and one such resume read the device 33 times over). A log that was
// all in the page cache before the read is left there: dropping it would
// only empty the cache of what somebody just read. The kernel is not
// asked for the next window (FADV_WILLNEED): it reads that in pages of
// 4 KB, where its own readahead uses large folios, and a cold read took
// 1.5 times as long with it (docs/benchmarks.md, issue 26). Only a
// stretch of at least seqHintFrom gets the hints: a short one is the tail
// a writer's index lacks.
const (
	seqHintFrom = 16 << 20
	// seqWindow is how much is read before the pages behind are dropped.
	seqWindow = 16 << 20
	// maxFolio is the largest folio of the page cache on x86-64, a huge
	// page: the kernel drops a folio only when the whole of it is asked
	// for.
	maxFolio = 2 << 20
	// seqBuf is the size of one read: small enough that what was read is
	// still in the core's cache when it is scanned.
	seqBuf = 256 << 10
	// progressEvery is how often a long read says how far it is.
	progressEvery = 5 * time.Second
)

// seqReader reads f from off to end in order, hinting the kernel as above
// for a long stretch and reporting progress.
type seqReader struct {
	f               *os.File
	start, off, end int64
	hint            bool
	drop            bool  // drop what is behind: the stretch was not all cached
	dropped         int64 // DONTNEED given below dropped
	report          progressReport
}

// progressReport tells progress, when not nil, how far a long read is:
// every progressEvery, and once at the end when it told before.
type progressReport struct {
	progress           func(read, total int64)
	every              time.Duration
	nextReport         time.Time
	reportedAtLeastOne bool
}

func newProgressReport(progress func(read, total int64)) progressReport {
	return newProgressReportEvery(progress, progressEvery)
}

// newProgressReportEvery is newProgressReport reporting every every.
func newProgressReportEvery(progress func(read, total int64), every time.Duration) progressReport {
	return progressReport{progress: progress, every: every, nextReport: time.Now().Add(every)}
}

// tick reports read of total when progressEvery has passed since the last
// report.
func (p *progressReport) tick(read, total int64) {
	if p.progress == nil {
		return
	}
	if now := time.Now(); now.After(p.nextReport) {
		p.progress(read, total)
		p.reportedAtLeastOne = true
		p.nextReport = now.Add(p.every)
	}
}

// end reports the read's end, read of total, when it reported before.
func (p *progressReport) end(read, total int64) {
	if p.progress != nil && p.reportedAtLeastOne {
		p.progress(read, total)
		p.reportedAtLeastOne = false
	}
}

// newSeqReader reads f from off to end. progress, if not nil, is called
// every progressEvery with the bytes read so far and the stretch's length,
// and once at the end when it was called before.
func newSeqReader(f *os.File, off, end int64, progress func(read, total int64)) *seqReader {
	r := &seqReader{f: f, start: off, off: off, end: end, dropped: off,
		hint: end-off >= seqHintFrom, report: newProgressReport(progress)}
	if r.hint {
		r.drop = !cachedWhole(f, off, end-off)
		adviseSequential(f, off, end-off)
	}
	return r
}

func (r *seqReader) Read(p []byte) (int, error) {
	if r.off >= r.end {
		r.finish()
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.end-r.off)]
	n, err := r.f.ReadAt(p, r.off)
	r.off += int64(n)
	if r.drop && r.off-r.dropped >= seqWindow {
		// Up to a folio's start: the kernel drops only whole folios, and
		// the next drop starts there.
		upTo := r.off &^ (maxFolio - 1)
		adviseDontNeed(r.f, r.dropped, upTo-r.dropped)
		r.dropped = upTo
	}
	r.report.tick(r.off-r.start, r.end-r.start)
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
	if r.drop && r.off > r.dropped {
		adviseDontNeed(r.f, r.dropped, r.off-r.dropped)
		r.dropped = r.off
	}
	r.report.end(r.off-r.start, r.end-r.start)
}
