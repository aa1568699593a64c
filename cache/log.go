package cache

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
)

// A record in the log is one write:
//
//	magic   4 bytes  "TXC1"
//	length  4 bytes  little-endian length of the body
//	crc     4 bytes  CRC-32C of the length's bytes and the body
//	body    op (1 byte), [time (uvarint)], key length (uvarint), key, value
//
// op is 1 (a put), 2 (a delete) or 3 (a put with its time: the Unix
// milliseconds it was put at, for stats and prune --older-than). Puts are
// written as 3 since the log has batched writes; a 1 is read as a put of
// unknown time, older than any other.
//
// The magic lets a scan find the next record after bytes it cannot read (a
// write torn by a crash, a block a power loss left as zeros); the CRC tells
// a whole record from such bytes.
const (
	recordHeader = 12
	opPut        = 1
	opDelete     = 2
	opPutAt      = 3
	// maxKey and maxValue bound what a record holds, so a length read
	// from torn bytes is not believed.
	maxKey   = 1024
	maxValue = 1 << 30
	maxBody  = 1 + 2*binary.MaxVarintLen64 + maxKey + maxValue
)

var (
	magic    = [4]byte{'T', 'X', 'C', '1'}
	castagno = crc32.MakeTable(crc32.Castagnoli)
)

// record is a parsed log record; value aliases the bytes it was parsed
// from. op is opPut or opDelete (an opPutAt is parsed as an opPut with its
// time); at is a put's Unix milliseconds, 0 when unknown.
type record struct {
	op    byte
	key   string
	value []byte
	at    int64
}

// appendRecord appends the record of op on key (and value) to b; a put
// is written with its time at, Unix milliseconds.
func appendRecord(b []byte, op byte, key string, value []byte, at int64) []byte {
	start := len(b)
	b = append(b, magic[:]...)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0) // length and crc, set below
	if op == opPut {
		b = append(b, opPutAt)
		b = binary.AppendUvarint(b, uint64(max(at, 0)))
	} else {
		b = append(b, op)
	}
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = append(b, value...)
	body := len(b) - start - recordHeader
	binary.LittleEndian.PutUint32(b[start+4:], uint32(body))
	crc := crc32.Update(0, castagno, b[start+4:start+8])
	crc = crc32.Update(crc, castagno, b[start+recordHeader:])
	binary.LittleEndian.PutUint32(b[start+8:], crc)
	return b
}

// bodyLen returns the body length a header claims, and false for a
// header that cannot begin a record.
func bodyLen(h []byte) (int, bool) {
	if !bytes.Equal(h[:4], magic[:]) {
		return 0, false
	}
	n := binary.LittleEndian.Uint32(h[4:8])
	return int(n), n >= 2 && n <= maxBody
}

// parseRecord parses rec, one whole record; false when it is not one.
func parseRecord(rec []byte) (record, bool) {
	if len(rec) < recordHeader {
		return record{}, false
	}
	n, ok := bodyLen(rec)
	if !ok || len(rec) != recordHeader+n {
		return record{}, false
	}
	crc := crc32.Update(0, castagno, rec[4:8])
	crc = crc32.Update(crc, castagno, rec[recordHeader:])
	if crc != binary.LittleEndian.Uint32(rec[8:12]) {
		return record{}, false
	}
	op, body := rec[recordHeader], rec[recordHeader+1:]
	var at uint64
	switch op {
	case opPut, opDelete:
	case opPutAt:
		var w int
		if at, w = binary.Uvarint(body); w <= 0 || at > 1<<62 {
			return record{}, false
		}
		op, body = opPut, body[w:]
	default:
		return record{}, false
	}
	klen, w := binary.Uvarint(body)
	if w <= 0 || klen > maxKey || uint64(len(body)-w) < klen {
		return record{}, false
	}
	key := body[w : w+int(klen)]
	return record{op: op, key: string(key), value: body[w+int(klen):], at: int64(at)}, true
}

// scan indexes the records in data, the log's bytes from offset base,
// calling apply for each whole one, and returns how many bytes it is done
// with. need is the size of the record it stopped in, so a caller whose
// buffer is smaller can grow it.
//
// Bytes that are no record are skipped up to the next magic. The log's
// bytes before final are final, no write being in progress there (the
// caller holds the log's lock): a record that claims to end past final is
// torn — a writer killed in its write — and skipped. A record that data
// holds only the start of, but that ends before final, is for the caller
// to read whole and scan again.
func scan(data []byte, base, final int64, apply func(r record, off int64, size int)) (consumed, need int) {
	off := 0
	for {
		rest := data[off:]
		if len(rest) == 0 {
			return off, recordHeader
		}
		pos := base + int64(off)
		if len(rest) >= len(magic) && !bytes.Equal(rest[:len(magic)], magic[:]) {
			off += resync(rest)
			continue
		}
		size := recordHeader
		if len(rest) >= recordHeader {
			n, ok := bodyLen(rest)
			if !ok {
				off += resync(rest)
				continue
			}
			size += n
		}
		if len(rest) < size {
			if pos+int64(size) > final {
				off += resync(rest) // torn: see above
				continue
			}
			return off, size
		}
		r, ok := parseRecord(rest[:size])
		if !ok {
			off += resync(rest)
			continue
		}
		apply(r, pos, size)
		off += size
	}
}

// resync returns how far to skip from rest, bytes at which no record
// begins: to the next magic, or to the last bytes that could begin one.
func resync(rest []byte) int {
	if len(rest) == 0 {
		return 0
	}
	if i := bytes.Index(rest[1:], magic[:]); i >= 0 {
		return 1 + i
	}
	return max(1, len(rest)-len(magic)+1)
}
