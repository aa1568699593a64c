package exec

import (
	"strconv"
	"unicode/utf8"
)

// capBuffer is an io.Writer that keeps the first and the last half of
// max bytes of what is written to it, so that both the command's first
// complaint and its final one survive a flood of output.
type capBuffer struct {
	max   int
	head  []byte
	tail  []byte // a ring once full
	next  int    // where the ring writes next
	total int64
}

func newCapBuffer(max int) *capBuffer {
	return &capBuffer{max: max}
}

func (b *capBuffer) Write(p []byte) (int, error) {
	n := len(p)
	b.total += int64(n)
	headMax := b.max / 2
	if room := headMax - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	tailMax := b.max - headMax
	if tailMax == 0 {
		return n, nil
	}
	if len(p) >= tailMax {
		b.tail = append(b.tail[:0], p[len(p)-tailMax:]...)
		b.next = 0
		return n, nil
	}
	for len(p) > 0 {
		if len(b.tail) < tailMax {
			k := min(tailMax-len(b.tail), len(p))
			b.tail = append(b.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(b.tail[b.next:], p)
		b.next = (b.next + k) % tailMax
		p = p[k:]
	}
	return n, nil
}

// String returns everything written if it fit, else the head, a marker
// saying how many bytes were dropped, and the tail, cut at rune boundaries.
func (b *capBuffer) String() string {
	tail := make([]byte, 0, len(b.tail))
	tail = append(tail, b.tail[b.next:]...)
	tail = append(tail, b.tail[:b.next]...)
	elided := b.total - int64(len(b.head)) - int64(len(tail))
	if elided == 0 {
		return string(b.head) + string(tail)
	}
	head := b.head
	for j := len(head) - 1; j >= 0 && j >= len(head)-utf8.UTFMax; j-- {
		if utf8.RuneStart(head[j]) {
			if !utf8.FullRune(head[j:]) {
				elided += int64(len(head) - j)
				head = head[:j]
			}
			break
		}
	}
	for i := 0; i < utf8.UTFMax && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
		elided++
	}
	return string(head) + "…[" + strconv.FormatInt(elided, 10) + " bytes elided]…" + string(tail)
}
