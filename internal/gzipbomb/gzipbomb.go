package gzipbomb

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"io"
)

// chunk is how many fill bytes one repeated block inflates to.
const chunk = 1 << 20

// Write writes to w a valid gzip stream whose content is prefix, then n
// copies of fill, then suffix (n is rounded up to a whole MiB). It stops
// at the first error w returns, as a server does when its client hangs
// up. prefix and suffix must be shorter than 32 KiB.
func Write(w io.Writer, prefix []byte, fill byte, n int64, suffix []byte) error {
	run := bytes.Repeat([]byte{fill}, chunk)
	var first, again, last bytes.Buffer
	fw, _ := flate.NewWriter(&first, flate.BestCompression) // the level is valid
	// After a sync flush each block starts on a byte boundary and refers
	// only to the last 32 KiB, all fill bytes by then: the second block,
	// sent once per MiB, inflates to the same MiB wherever it is.
	_, _ = fw.Write(prefix)
	_, _ = fw.Write(run)
	_ = fw.Flush()
	fw.Reset(&again)
	_, _ = fw.Write(run)
	_ = fw.Flush()
	fw.Reset(&last)
	_, _ = fw.Write(suffix)
	_ = fw.Close()

	crc := crc32.Update(0, crc32.IEEETable, prefix)
	header := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}
	if _, err := w.Write(append(header, first.Bytes()...)); err != nil {
		return err
	}
	crc = crc32.Update(crc, crc32.IEEETable, run)
	for sent := int64(chunk); sent < n; sent += chunk {
		if _, err := w.Write(again.Bytes()); err != nil {
			return err
		}
		crc = crc32.Update(crc, crc32.IEEETable, run)
	}
	crc = crc32.Update(crc, crc32.IEEETable, suffix)
	size := uint32(int64(len(prefix)) + max(n+chunk-1, chunk)/chunk*chunk + int64(len(suffix)))
	trailer := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(last.Bytes(), crc), size)
	_, err := w.Write(trailer)
	return err
}
