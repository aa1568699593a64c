package input

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// BlockBytes is the size of the blocks a Scan checksums (Summary.Blocks)
// and a reader opened by OpenScanned checks before it hands out any item
// read from them: 1 MiB, so a run holds one block more than it did and a
// ten-gigabyte input keeps 40 KiB of checksums.
const BlockBytes = 1 << 20

// castagnoli is the CRC-32C table: the checksum the CPU computes, so
// checking a block costs a run next to nothing beside the scan's SHA-256.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrChanged is the error of a read of an input that is no longer the file
// its scan read: a block whose bytes differ, a file now shorter, or longer.
var ErrChanged = errors.New("the input changed while the job ran")

// ChangedError says where an input was found to differ from its scan.
type ChangedError struct {
	Path string
	// Offset is the first byte of the block that differs, or the size the
	// scan read when the file is now longer or shorter.
	Offset int64
	// What is how it differs: "its bytes", "it is shorter", "it grew".
	What string
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("the input %s changed while the job ran (%s at byte %d): no item was read from the changed part, so the job holds results of one input only; resume it once the input is back as it was, or start a new job with `tenax run`", e.Path, e.What, e.Offset)
}

// Unwrap makes a ChangedError ErrChanged, for errors.Is.
func (e *ChangedError) Unwrap() error { return ErrChanged }

// OpenScanned opens path for reading items of format f, as Open does, and
// checks what it reads against sum, the Scan of the same file that the job
// hashed: every BlockBytes block is read whole and compared with its
// checksum before any of its bytes reach an item, so an input rewritten
// while a job runs stops the run at the first changed block instead of
// mixing two inputs. When sum read the whole file, the file must end where
// it ended then: lines appended mid-run are not read, and the end is
// ErrChanged instead of io.EOF. Past the bytes of a scan that stopped at
// MaxItems nothing is checked: no hash covers them.
func OpenScanned(path string, f Format, sum Summary) (*Reader, error) {
	if _, err := ParseFormat(string(f)); err != nil {
		return nil, fmt.Errorf("input %s: %w", path, err)
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	r := NewReader(&checkedReader{src: file, path: path, sum: sum}, path, f)
	r.closer = file
	return r, nil
}

// checkedReader serves the bytes of src only once the block holding them
// matches its checksum in sum.
type checkedReader struct {
	src  io.Reader
	path string
	sum  Summary
	off  int64  // bytes of src read so far
	buf  []byte // what is left to serve of the checked block
	// block holds the block read: buf is its unserved rest, so that each
	// block is read into the same memory (a new one for each block, as
	// buf's shrinking capacity made it, cost a resume's skip of a million
	// items more than its reads).
	block []byte
	err   error // sticky: once changed, always changed
}

func (c *checkedReader) Read(p []byte) (int, error) {
	if len(c.buf) == 0 && c.err == nil {
		c.err = c.fill()
	}
	if len(c.buf) == 0 {
		return 0, c.err
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

// fill reads and checks the next block, or past the scanned bytes of an
// incomplete scan, reads on unchecked.
func (c *checkedReader) fill() error {
	block := int(c.off / BlockBytes)
	if c.off >= c.sum.Bytes || block >= len(c.sum.Blocks) {
		return c.pastScan()
	}
	size := min(int64(BlockBytes), c.sum.Bytes-c.off)
	if cap(c.block) < int(size) {
		c.block = make([]byte, size)
	}
	c.buf = c.block[:size]
	n, err := io.ReadFull(c.src, c.buf)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		c.buf = c.buf[:0]
		return &ChangedError{Path: c.path, Offset: c.off + int64(n), What: "it is shorter"}
	}
	if err != nil {
		c.buf = c.buf[:0]
		return err
	}
	if crc32.Checksum(c.buf, castagnoli) != c.sum.Blocks[block] {
		c.buf = c.buf[:0]
		return &ChangedError{Path: c.path, Offset: c.off, What: "its bytes differ"}
	}
	c.off += size
	return nil
}

// pastScan is the read after the bytes the scan checked: the end of an
// input read whole (ErrChanged if it has more now), or the unchecked rest
// of one scanned only in part.
func (c *checkedReader) pastScan() error {
	if !c.sum.Complete {
		if cap(c.block) < readBufferSize {
			c.block = make([]byte, readBufferSize)
		}
		n, err := c.src.Read(c.block[:readBufferSize])
		c.buf = c.block[:n]
		c.off += int64(n)
		if n > 0 && err != nil {
			err = nil // served now, seen again on the next read
		}
		return err
	}
	var one [1]byte
	n, err := io.ReadFull(c.src, one[:])
	if n > 0 {
		return &ChangedError{Path: c.path, Offset: c.sum.Bytes, What: "it grew"}
	}
	if errors.Is(err, io.EOF) {
		return io.EOF
	}
	return err
}
