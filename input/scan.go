package input

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
)

// maxReportedBadLines is how many bad lines a Summary keeps.
const maxReportedBadLines = 20

// ctxCheckEvery is how many items a scan reads between looks at its
// context.
const ctxCheckEvery = 1024

// Summary is what one pass over an input tells before a run.
type Summary struct {
	// Items is the number of items, bad lines included: the size of the
	// idx space (blank lines are not items). Of a scan that stopped at
	// MaxItems, the items read.
	Items int
	// SHA256 is the hex SHA-256 of the first Bytes bytes of the file:
	// every byte when Complete, for the manifest and resume's
	// changed-input check.
	SHA256 string
	// Bytes is how many bytes of the file SHA256 covers.
	Bytes int64
	// Complete says the scan read the whole file. A scan that stopped at
	// MaxItems did not: Items and SHA256 describe a prefix.
	Complete bool
	// PrefixSHA256 is the hex SHA-256 of the first ScanOptions.PrefixBytes
	// bytes of the file, when asked for and the file has that many.
	PrefixSHA256 string
	// Blocks holds the CRC-32C of each BlockBytes block of the Bytes
	// bytes SHA256 covers, the last one maybe shorter: what OpenScanned
	// checks a run's reads against, so that a job reads the input it
	// hashed.
	Blocks []uint32
	// BadLines holds the first 20 bad lines.
	BadLines []*LineError
	// BadCount is the number of bad lines in all.
	BadCount int
}

// ScanOptions bound a Scan.
type ScanOptions struct {
	// MaxItems stops the scan once it has read this many items (0: read
	// the whole file), so that a run of the first hundred items of a
	// ten-million-line file does not read it all first.
	MaxItems int
	// PrefixBytes, when positive, asks for the SHA-256 of the file's first
	// PrefixBytes bytes as well (Summary.PrefixSHA256): what a resume
	// compares with the hash of the prefix an earlier, limited scan read.
	PrefixBytes int64
	// CountOnly counts and hashes the items without decoding them (Reader.Skip),
	// so bad lines are not looked for: for an input checked before, whose
	// hash the caller compares with the one it had then.
	CountOnly bool
}

// Scan reads path once, streaming, and returns its item count, hash and
// bad lines. Bad lines are not an error: the caller applies
// input.on_bad_line. The error is for a file that cannot be read (or a
// CSV file whose header is bad), or ctx's error: a canceled scan stops at
// once, even while a read from a pipe waits.
func Scan(ctx context.Context, path string, f Format, opts ScanOptions) (Summary, error) {
	if _, err := ParseFormat(string(f)); err != nil {
		return Summary{}, fmt.Errorf("input %s: %w", path, err)
	}
	file, err := os.Open(path)
	if err != nil {
		return Summary{}, fmt.Errorf("input: %w", err)
	}
	defer file.Close()
	// Closing the file ends a read that waits on a pipe.
	stop := context.AfterFunc(ctx, func() { file.Close() })
	defer stop()
	h := &prefixHash{Hash: sha256.New(), prefix: opts.PrefixBytes}
	r := NewReader(io.TeeReader(file, h), path, f)
	s := Summary{Complete: true}
	if opts.CountOnly {
		// Whole buffers of lines at a time, up to MaxItems, and a look at
		// ctx every ctxCheckEvery items; the loop below takes what stopped
		// it, and the end.
		err := r.SkipWhile(func(idx int) bool {
			return (opts.MaxItems == 0 || idx < opts.MaxItems) && (idx%ctxCheckEvery != 0 || ctx.Err() == nil)
		})
		s.Items = r.NextIdx()
		if err != nil && !errors.Is(err, io.EOF) {
			return Summary{}, scanError(ctx, path, err)
		}
		if err != nil {
			return s.end(ctx, h, file, path)
		}
	}
	for {
		if s.Items%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return Summary{}, fmt.Errorf("reading the input %s: %w", path, err)
			}
		}
		if opts.MaxItems > 0 && s.Items == opts.MaxItems {
			// Stop here, unless nothing but the end of the file is left.
			if _, err := r.br.Peek(1); err != nil && !errors.Is(err, io.EOF) {
				return Summary{}, scanError(ctx, path, err)
			} else if err == nil {
				s.Complete = false
				break
			}
		}
		var err error
		if opts.CountOnly {
			_, err = r.Skip()
		} else {
			_, err = r.next(decodeCheck)
		}
		if err == io.EOF {
			break
		}
		if le, ok := errors.AsType[*LineError](err); ok && le.Idx >= 0 {
			s.BadCount++
			if len(s.BadLines) < maxReportedBadLines {
				s.BadLines = append(s.BadLines, le)
			}
		} else if err != nil {
			return Summary{}, scanError(ctx, path, err)
		}
		s.Items++
	}
	return s.end(ctx, h, file, path)
}

// end completes the summary of a scan whose reads are done: the hashes of
// what h was written.
func (s Summary) end(ctx context.Context, h *prefixHash, file io.Reader, path string) (Summary, error) {
	if s.Complete {
		// Next reports io.EOF only once the whole file is read, so this
		// copies nothing; it keeps the hash a hash of every byte of the
		// file should that ever change.
		if _, err := io.Copy(h, file); err != nil {
			return Summary{}, scanError(ctx, path, err)
		}
	}
	s.SHA256, s.Bytes, s.Blocks = hex.EncodeToString(h.Sum(nil)), h.n, h.blocks()
	if h.prefix > 0 && h.n >= h.prefix {
		s.PrefixSHA256 = h.prefixSum
	}
	return s, nil
}

// scanError is ctx's error when the scan was canceled (a read of a file
// closed under it fails), err otherwise.
func scanError(ctx context.Context, path string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("reading the input %s: %w", path, ctx.Err())
	}
	return fmt.Errorf("input %s: %w", path, err)
}

// prefixHash hashes what it is written and notes the hash of the first
// prefix bytes on the way, and the checksum of each BlockBytes block.
type prefixHash struct {
	hash.Hash
	n         int64
	prefix    int64
	prefixSum string
	sums      []uint32 // of the blocks written whole
	block     uint32   // of the block being written
}

// blocks is the checksum of every block written, the last one included
// even when short.
func (h *prefixHash) blocks() []uint32 {
	if h.n%BlockBytes != 0 {
		return append(h.sums, h.block)
	}
	return h.sums
}

// sumBlocks adds p, written at offset h.n, to the blocks' checksums.
func (h *prefixHash) sumBlocks(p []byte) {
	off := h.n
	for len(p) > 0 {
		k := min(int64(len(p)), BlockBytes-off%BlockBytes)
		h.block = crc32.Update(h.block, castagnoli, p[:k])
		off += k
		p = p[k:]
		if off%BlockBytes == 0 {
			h.sums = append(h.sums, h.block)
			h.block = 0
		}
	}
}

func (h *prefixHash) Write(p []byte) (int, error) {
	h.sumBlocks(p)
	if h.prefix > 0 && h.n < h.prefix && h.n+int64(len(p)) >= h.prefix {
		k := h.prefix - h.n
		h.Hash.Write(p[:k])
		h.prefixSum = hex.EncodeToString(h.Hash.Sum(nil))
		h.Hash.Write(p[k:])
	} else {
		h.Hash.Write(p)
	}
	h.n += int64(len(p))
	return len(p), nil
}
