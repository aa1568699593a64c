package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// A long read of the log (at least seqHintFrom: building results.idx for a
// job without one) is shared by several goroutines, since checking every
// line keeps one core busy (docs/benchmarks.md, issue 26). The stretch is
// cut into chunks of about chunkSize, each starting where a line starts,
// and each worker reads whole chunks with a logReader of its own, through
// a buffer small enough to stay in the core's cache (seqBuf). The
// caller's goroutine takes the chunks' lines in log order, so it sees what
// one logReader over the stretch gives: the same lines in the same order
// (of two lines of one idx, the later one last), and the first damaged
// line's CorruptError, numbered from the stretch's first line, after every
// line before it. Memory stays bounded: at most chunksAhead chunks per
// worker are read ahead of the caller.
const (
	// chunkSize is the nominal length of a chunk: a multiple of maxFolio,
	// so that what is behind is dropped in whole folios.
	chunkSize = 4 << 20
	// chunksAhead is how many chunks per worker may wait, read, for the
	// caller to take their lines.
	chunksAhead = 2
)

// chunkScan reads the log f from from to to with workers goroutines.
type chunkScan struct {
	f        *os.File
	path     string
	from, to int64
	// lineNo is the number of lines before from, for error messages.
	lineNo  int
	workers int
	chunk   int64
	// hint tells the kernel that the stretch is read in order, and drops
	// what is behind, as seqReader does.
	hint     bool
	progress func(read, total int64)
}

// scannedChunk is what a worker read of chunk k.
type scannedChunk struct {
	k          int
	start, end int64 // where the chunk's lines start and end
	lines      []indexEntry
	newlines   int   // newlines read, for numbering the lines after
	err        error // what stopped the read before end, if anything
	done       chan struct{}
}

// chunks returns the number of chunks.
func (c *chunkScan) chunks() int {
	return int((c.to-1-c.from/c.chunk*c.chunk)/c.chunk + 1)
}

// nominal returns where chunk k would start if lines did not matter: a
// multiple of c.chunk, but for the first chunk's from and the end's to.
func (c *chunkScan) nominal(k int) int64 {
	if k == 0 {
		return c.from
	}
	return min((c.from/c.chunk+int64(k))*c.chunk, c.to)
}

// run calls fn with every line of the stretch, in log order, and returns
// the first error of the read, as a logReader over it would.
func (c *chunkScan) run(ctx context.Context, fn func(indexEntry)) error {
	if c.from >= c.to {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var cached []bool
	if c.hint {
		adviseSequential(c.f, c.from, c.to-c.from)
		cached = c.cachedChunks()
	}
	// A chunk goes to a worker once it has its place in order, which the
	// caller leaves when it has taken its lines: at most cap(order) chunks
	// are read ahead of the caller.
	order := make(chan *scannedChunk, c.workers*chunksAhead)
	jobs := make(chan *scannedChunk)
	free := make(chan []indexEntry, cap(order))
	wg.Go(func() {
		defer close(jobs)
		for k := range c.chunks() {
			ch := &scannedChunk{k: k, done: make(chan struct{})}
			select {
			case order <- ch:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- ch:
			case <-ctx.Done():
				return
			}
		}
	})
	for range c.workers {
		wg.Go(func() { c.work(ctx, jobs, free) })
	}
	return c.collect(ctx, order, cached, free, fn)
}

// cachedChunks says which chunks are all in the page cache, asked before
// any read, since a read brings the chunks ahead of it in too.
func (c *chunkScan) cachedChunks() []bool {
	cached := make([]bool, c.chunks())
	for k := range cached {
		cached[k] = cachedWhole(c.f, c.nominal(k), c.nominal(k+1)-c.nominal(k))
	}
	return cached
}

// collect takes the chunks' lines in order and gives them to fn.
func (c *chunkScan) collect(ctx context.Context, order <-chan *scannedChunk, cached []bool, free chan []indexEntry, fn func(indexEntry)) error {
	report := newProgressReport(c.progress)
	behind := dropBehind{c: c, from: -1}
	lineNo := c.lineNo
	for range c.chunks() {
		var ch *scannedChunk
		select {
		case ch = <-order:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case <-ch.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		for _, e := range ch.lines {
			fn(e)
		}
		if ch.err != nil {
			if ce, ok := errors.AsType[*CorruptError](ch.err); ok && ce.Line > 0 {
				ce.Line += lineNo
			}
			return ch.err
		}
		lineNo += ch.newlines
		select {
		case free <- ch.lines[:0]:
		default:
		}
		if cached != nil {
			behind.taken(ch.k, cached[ch.k])
		}
		report.tick(ch.end-c.from, c.to-c.from)
	}
	report.end(c.to-c.from, c.to-c.from)
	return nil
}

// dropBehind drops from the page cache the chunks the caller has taken,
// in stretches of at least seqWindow, but for those that were in it
// before they were read: a long read neither fills the cache with a log
// nobody rereads nor empties it of one that somebody just read.
type dropBehind struct {
	c    *chunkScan
	from int64 // the start of what is to drop, -1 for nothing
}

// taken notes that the caller took chunk k, which was cached before.
func (d *dropBehind) taken(k int, cached bool) {
	c := d.c
	if cached {
		d.drop(c.nominal(k))
		d.from = -1
		return
	}
	if d.from < 0 {
		d.from = c.nominal(k)
	}
	switch {
	case k == c.chunks()-1:
		d.drop(c.to)
	case c.nominal(k+1)-d.from >= seqWindow:
		// Keep the folio that holds the chunk's last byte: the next
		// chunk's worker may still read it to find where its lines start.
		d.drop((c.nominal(k+1) - 1) &^ (maxFolio - 1))
	}
}

// drop drops what is pending up to upTo.
func (d *dropBehind) drop(upTo int64) {
	if d.from >= 0 && upTo > d.from {
		adviseDontNeed(d.c.f, d.from, upTo-d.from)
		d.from = upTo
	}
}

// work reads the chunks jobs names, each in full or up to its first error.
func (c *chunkScan) work(ctx context.Context, jobs <-chan *scannedChunk, free chan []indexEntry) {
	// Enough to find where a chunk's lines start; read grows it to seqBuf.
	buf := make([]byte, 64<<10)
	for ch := range jobs {
		select {
		case ch.lines = <-free:
		default:
		}
		ch.start, ch.err = lineStart(c.f, c.nominal(ch.k), c.from, c.to, buf)
		if ch.err == nil {
			ch.end, ch.err = lineStart(c.f, c.nominal(ch.k+1), c.from, c.to, buf)
		}
		if ch.err != nil {
			ch.err = fmt.Errorf("jsonl: reading %s: %w", c.path, ch.err)
		} else {
			ch.err = c.read(ctx, ch, &buf)
		}
		close(ch.done)
	}
}

// read reads the lines of the chunk ch, whose start and end are set,
// through *buf. Chunks are read, not mapped: a mapped chunk is scanned
// where the page cache holds it, but on this machine its page faults and
// TLB misses cost more than the copy a read makes into a buffer that stays
// in the core's cache (a warm first resume's CPU 1.3–1.9 s mapped,
// 0.9–1.2 s read; docs/benchmarks.md, issue 38).
func (c *chunkScan) read(ctx context.Context, ch *scannedChunk, buf *[]byte) error {
	if ch.start >= ch.end {
		return nil
	}
	if len(*buf) < seqBuf {
		*buf = make([]byte, seqBuf)
	}
	lr := newLogReaderBuf(io.NewSectionReader(c.f, ch.start, ch.end-ch.start), c.path, ch.start, *buf)
	for n := 1; ; n++ {
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			ch.newlines = lr.lineNo
			return nil
		}
		if err != nil {
			return err
		}
		ch.lines = append(ch.lines, entryOf(line))
	}
}

// lineStart returns the start of the first line that starts at or after
// off in the stretch [from, to), from a line's start: off itself when a
// newline precedes it, else just past the next newline, else to.
func lineStart(f *os.File, off, from, to int64, buf []byte) (int64, error) {
	if off <= from || off >= to {
		return min(max(off, from), to), nil
	}
	// Most lines are short: read a few KB first, then larger steps.
	step := min(int64(len(buf)), 4<<10)
	for at := off - 1; at < to; step = int64(len(buf)) {
		b := buf[:min(step, to-at)]
		n, err := f.ReadAt(b, at)
		if k := bytes.IndexByte(b[:n], '\n'); k >= 0 {
			return at + int64(k) + 1, nil
		}
		if errors.Is(err, io.EOF) {
			// The file is shorter than it was: the chunk runs to its end.
			return to, nil
		}
		if err != nil {
			return 0, err
		}
		at += int64(n)
	}
	return to, nil
}
