package jsonl

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"

	"github.com/tenaxhq/tenax/store"
)

// The outcomes index, results.idx, lets a resume read sixteen bytes per
// record instead of the record: after a 16-byte header, one entry per line
// of results.jsonl, in log order, each
//
//	start  48 bits  offset of the line in results.jsonl
//	sum    uint16   a hash of the entry's other fields (entrySum)
//	length uint32   bytes of the line, its newline included
//	idx    uint32   the record's _idx; the top bit set when it failed
//
// little-endian. The log stays the only source of truth: the index is
// written after the log lines it describes are fsynced, it is never
// fsynced itself, and a reader trusts it only as far as it checks out —
// every entry's sum right, entries in order and inside the log, the last
// one and a sample over the rest (spread evenly, and drawn afresh at every
// open) naming the lines really there. An
// index that is missing or behind is completed from the log (reading only
// the lines it lacks); one that does not check out is rebuilt from the
// whole log. Version 1 had no sum: an entry damaged in place (a failed
// flag set, an idx changed) went unseen, and resume trusted it.
const (
	indexFile       = "results.idx"
	indexHeader     = "tenax results 2\n"
	indexEntrySize  = 16
	indexFailedFlag = 1 << 31
	// maxIndexedLog is the log size an entry's 48-bit start can reach;
	// a longer log goes without an index.
	maxIndexedLog = 1 << 48
	// indexSamples is how many entries spread evenly over the index, and
	// as many again drawn at random at each open, a reader checks against
	// the log, besides the last, before it trusts the index.
	indexSamples = 16
)

// entrySum is the checksum of an entry's fields: any change to one of
// them changes it but for one chance in 65,536. A resume sums every entry,
// so it is a multiply-xorshift mix of the fields (splitmix64's finalizer),
// a few nanoseconds: CRC-32C over each entry's 14 bytes made reading the
// index several times slower.
func entrySum(start uint64, length, v uint32) uint16 {
	h := mix64(start&(maxIndexedLog-1)) ^ mix64(uint64(length)<<32|uint64(v))
	return uint16(mix64(h))
}

func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// indexEntry is one line of the log, as the index keeps it.
type indexEntry struct {
	start  int64
	length uint32
	idx    int
	failed bool
}

func (e indexEntry) end() int64 { return e.start + int64(e.length) }

// appendEntry encodes e, whose start is below maxIndexedLog.
func appendEntry(b []byte, e indexEntry) []byte {
	var raw [indexEntrySize]byte
	binary.LittleEndian.PutUint64(raw[:], uint64(e.start))
	binary.LittleEndian.PutUint32(raw[8:], e.length)
	v := uint32(e.idx)
	if e.failed {
		v |= indexFailedFlag
	}
	binary.LittleEndian.PutUint32(raw[12:], v)
	binary.LittleEndian.PutUint16(raw[6:], entrySum(uint64(e.start), e.length, v))
	return append(b, raw[:]...)
}

// decodeEntry decodes an entry; ok is false when its sum is wrong.
func decodeEntry(b []byte) (e indexEntry, ok bool) {
	start := binary.LittleEndian.Uint64(b) & (maxIndexedLog - 1)
	length := binary.LittleEndian.Uint32(b[8:])
	v := binary.LittleEndian.Uint32(b[12:])
	return indexEntry{
		start:  int64(start),
		length: length,
		idx:    int(v &^ indexFailedFlag),
		failed: v&indexFailedFlag != 0,
	}, binary.LittleEndian.Uint16(b[6:]) == entrySum(start, length, v)
}

func entryOf(line lineInfo) indexEntry {
	return indexEntry{start: line.start, length: uint32(line.end - line.start), idx: line.idx, failed: line.failed}
}

// errIndexBad is an index that does not describe the log: it is rebuilt.
var errIndexBad = errors.New("jsonl: results.idx does not match results.jsonl")

// checkedIndex opens the index and checks it against the log f of size
// bytes: the entries it can vouch for, and the offset of the log they
// cover. A missing or unusable index covers nothing (n 0, covered 0) and
// is returned nil.
func checkedIndex(path string, f *os.File, size int64) (idx *os.File, n int64, covered int64) {
	idx, err := os.Open(path)
	if err != nil {
		return nil, 0, 0
	}
	fi, err := idx.Stat()
	var head [len(indexHeader)]byte
	if err != nil || fi.Size() < int64(len(indexHeader)) || (fi.Size()-int64(len(indexHeader)))%indexEntrySize != 0 {
		idx.Close()
		return nil, 0, 0
	}
	if _, err := idx.ReadAt(head[:], 0); err != nil || string(head[:]) != indexHeader {
		idx.Close()
		return nil, 0, 0
	}
	n = (fi.Size() - int64(len(indexHeader))) / indexEntrySize
	// A writer may have indexed lines past size since the caller looked:
	// use the entries that end within it (they are in log order).
	var raw [indexEntrySize]byte
	entry := func(i int64) (indexEntry, bool) {
		if _, err := idx.ReadAt(raw[:], int64(len(indexHeader))+i*indexEntrySize); err != nil {
			return indexEntry{}, false
		}
		return decodeEntry(raw[:])
	}
	lo, hi := int64(0), n // entries [0, lo) end within size; [hi, n) do not
	for lo < hi {
		mid := lo + (hi-lo)/2
		e, ok := entry(mid)
		if !ok {
			idx.Close()
			return nil, 0, 0
		}
		if e.end() <= size {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	n = lo
	if n == 0 {
		return idx, 0, 0
	}
	buf := make([]byte, 4<<10)
	last, ok := entry(n - 1)
	if !ok || last.length == 0 || !lineMatches(f, last, buf) {
		idx.Close()
		return nil, 0, 0
	}
	// The sums catch an entry damaged in place; a sample of lines checked
	// against the log catches an index whose entries are whole but wrong
	// (another job's index, one rewritten by a tool), for a few reads. The
	// sample is spread over the index and drawn afresh at every open: a
	// sample fixed by the index's length alone let an index forged with
	// right sums that spared those 17 entries be trusted (491 succeeded
	// items re-run). Now an index with m of its n entries forged passes
	// an open with a chance of (1 - m/n)^16 at most, and every open draws
	// again.
	for k, prev := int64(0), int64(-1); k < indexSamples; k++ {
		i := k * (n - 1) / indexSamples
		if i == prev {
			continue
		}
		prev = i
		if !sampleMatches(f, entry, i, buf) {
			idx.Close()
			return nil, 0, 0
		}
	}
	for range min(indexSamples, n) {
		if !sampleMatches(f, entry, rand.Int64N(n), buf) {
			idx.Close()
			return nil, 0, 0
		}
	}
	return idx, n, last.end()
}

// sampleMatches reports whether entry i, read by entry, has a right sum and
// names its line of the log f.
func sampleMatches(f *os.File, entry func(int64) (indexEntry, bool), i int64, buf []byte) bool {
	e, ok := entry(i)
	return ok && e.length != 0 && lineMatches(f, e, buf)
}

// lineMatches reads the log line e names and reports whether it is that
// record, reading through buf.
func lineMatches(f *os.File, e indexEntry, buf []byte) bool {
	lr := newLogReaderBuf(io.NewSectionReader(f, e.start, int64(e.length)), "", e.start, buf)
	// Whether the line is a record is for the reader that reads it to
	// judge (decodeRecord); here only where the index puts it counts.
	lr.noDecode = true
	line, err := lr.next()
	return err == nil && line.start == e.start && line.end == e.end() && line.idx == e.idx && line.failed == e.failed
}

// walkIndex calls fn with every line of the log f up to size, in log
// order: the first n from the index idx (nil for none), the rest read from
// the log after covered (readLog; progress, when set, hears how far a
// long read is). fromLog, when set, also receives the lines read from the
// log, for a writer to add them to the index. An index found out of order
// midway is errIndexBad.
func walkIndex(ctx context.Context, idx *os.File, n, covered int64, f *os.File, size int64, path string,
	fn func(indexEntry), fromLog func(indexEntry), progress func(read, total int64)) error {
	if idx != nil && n > 0 {
		if err := walkEntries(ctx, idx, n, covered, fn); err != nil {
			return err
		}
	}
	if covered >= size {
		return nil
	}
	emit := fn
	if fromLog != nil {
		emit = func(e indexEntry) {
			fn(e)
			fromLog(e)
		}
	}
	// The index has an entry per line before covered: error messages
	// count lines from there.
	return readLog(ctx, f, covered, size, path, int(n), emit, progress)
}

// walkEntries calls fn with the first n entries of the index idx, which
// must lie in order within the log's first covered bytes. It reads them
// a block at a time: through a bufio.Reader, sixteen bytes a call, they
// took a resume more time than summing and checking them.
func walkEntries(ctx context.Context, idx *os.File, n, covered int64, fn func(indexEntry)) error {
	buf := make([]byte, ctxCheckEvery/4*indexEntrySize)
	var prevEnd int64
	for i := int64(0); i < n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		m := min(n-i, int64(len(buf)/indexEntrySize))
		b := buf[:m*indexEntrySize]
		if _, err := idx.ReadAt(b, int64(len(indexHeader))+i*indexEntrySize); err != nil {
			return errIndexBad
		}
		for ; len(b) > 0; b = b[indexEntrySize:] {
			e, ok := decodeEntry(b)
			if !ok || e.start < prevEnd || e.length == 0 || e.end() > covered || e.idx > maxIdx {
				return errIndexBad
			}
			prevEnd = e.end()
			fn(e)
		}
		i += m
	}
	return nil
}

// readLog calls fn with every line of the log f from off, a line's start,
// to size, in log order; lineNo lines precede off. A long stretch is read
// by one goroutine per CPU tenax may use (chunkScan), a short one by the
// caller's in one sequential pass (seqReader).
func readLog(ctx context.Context, f *os.File, off, size int64, path string, lineNo int, fn func(indexEntry), progress func(read, total int64)) error {
	if workers := runtime.GOMAXPROCS(0); size-off >= seqHintFrom && workers > 1 {
		c := &chunkScan{f: f, path: path, from: off, to: size, lineNo: lineNo,
			workers: workers, chunk: chunkSize, hint: true, progress: progress}
		return c.run(ctx, fn)
	}
	buf := make([]byte, 64<<10)
	if size-off >= seqHintFrom {
		buf = make([]byte, seqBuf)
	}
	lr := newLogReaderBuf(newSeqReader(f, off, size, progress), path, off, buf)
	lr.lineNo = lineNo
	for n := 0; ; n++ {
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		fn(entryOf(line))
	}
}

// walkLog calls fn with every line of the log f up to size, through the
// index when it checks out and from the log alone when it does not.
// fromLog is as in walkIndex.
func walkLog(ctx context.Context, dir string, f *os.File, size int64, fn func(indexEntry), reset func(), fromLog func(indexEntry), progress func(read, total int64)) (rebuilt bool, err error) {
	path := filepath.Join(dir, resultsFile)
	idx, n, covered := checkedIndex(filepath.Join(dir, indexFile), f, size)
	if idx != nil {
		defer idx.Close()
	}
	err = walkIndex(ctx, idx, n, covered, f, size, path, fn, fromLog, progress)
	if !errors.Is(err, errIndexBad) {
		return idx == nil || n == 0, err
	}
	reset()
	return true, walkIndex(ctx, nil, 0, 0, f, size, path, fn, fromLog, progress)
}

// openIndex brings results.idx up to date with the log for a writer, which
// then appends to it as it flushes: an index that checks out gets the
// entries of the lines it lacks; any other is rebuilt, and seen is called
// with each of its entries, in order. It returns the index open for
// appending, its size, and whether it was rebuilt.
func openIndex(ctx context.Context, dir string, f *os.File, size int64, seen func(indexEntry), progress func(read, total int64)) (*os.File, int64, bool, error) {
	if size >= maxIndexedLog {
		return nil, 0, false, errIndexBad
	}
	w, n, err := updateIndex(ctx, dir, f, size, progress)
	if w != nil || err != nil {
		return w, n, false, err
	}
	w, n, err = rebuildIndex(ctx, dir, f, size, seen, progress)
	return w, n, err == nil, err
}

// updateIndex appends to an index that checks out the entries of the
// lines it lacks; it returns nil and no error for an index to rebuild.
func updateIndex(ctx context.Context, dir string, f *os.File, size int64, progress func(read, total int64)) (*os.File, int64, error) {
	path := filepath.Join(dir, indexFile)
	idx, n, covered := checkedIndex(path, f, size)
	if idx != nil {
		idx.Close()
		var missing []byte
		err := walkIndex(ctx, nil, 0, covered, f, size, filepath.Join(dir, resultsFile), func(e indexEntry) {
			missing = appendEntry(missing, e)
		}, nil, progress)
		if err != nil {
			return nil, 0, err
		}
		w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, 0, fmt.Errorf("jsonl: %w", err)
		}
		// Entries past the log's end (a log cut short by hand) go.
		if err := w.Truncate(int64(len(indexHeader)) + n*indexEntrySize); err != nil {
			w.Close()
			return nil, 0, fmt.Errorf("jsonl: %w", err)
		}
		if _, err := w.Write(missing); err != nil {
			w.Close()
			return nil, 0, fmt.Errorf("jsonl: %w", err)
		}
		return w, int64(len(indexHeader)) + n*indexEntrySize + int64(len(missing)), nil
	}
	return nil, 0, nil
}

// rebuildIndex writes the index of the whole log into a new file renamed
// over the old, calling seen with each entry.
func rebuildIndex(ctx context.Context, dir string, f *os.File, size int64, seen func(indexEntry), progress func(read, total int64)) (*os.File, int64, error) {
	path := filepath.Join(dir, indexFile)
	err := store.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		bw.WriteString(indexHeader)
		var b [indexEntrySize]byte
		err := walkIndex(ctx, nil, 0, 0, f, size, filepath.Join(dir, resultsFile), func(e indexEntry) {
			bw.Write(appendEntry(b[:0], e))
			seen(e)
		}, nil, progress)
		if err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return nil, 0, err
	}
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("jsonl: %w", err)
	}
	fi, err := w.Stat()
	if err != nil {
		w.Close()
		return nil, 0, fmt.Errorf("jsonl: %w", err)
	}
	return w, fi.Size(), nil
}
