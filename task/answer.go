package task

import (
	"io"
	"strconv"

	"github.com/tenaxhq/tenax/classify"
)

// DefaultMaxAnswerBytes is the largest answer a task accepts when its
// configuration names no bound: 16 MiB of a response body (after
// decompression) or of a command's stdout. An answer is held in memory,
// written into the item's record and read back by status and export, so
// a server or a command that sends gigabytes must not be taken at its
// word.
const DefaultMaxAnswerBytes = 16 << 20

// AnswerTooLargeError reports an answer longer than its task's bound. It
// is marked classify.Item wherever a LimitAnswer reader returns it: only
// this item's answer is too large, and asking again would bring the same.
type AnswerTooLargeError struct {
	// What names the answer: "answer" for a response body, "stdout" for
	// a command's.
	What string
	// Limit is the bound it went over, in bytes.
	Limit int64
}

// Error reads like "answer over 16 MiB (task.max_answer_bytes)", naming
// the spec key that raises the bound.
func (e *AnswerTooLargeError) Error() string {
	return e.What + " over " + byteSize(e.Limit) + " (task.max_answer_bytes)"
}

// TooLarge returns the error for an answer named what over limit bytes,
// marked classify.Item.
func TooLarge(what string, limit int64) error {
	return classify.WithClass(&AnswerTooLargeError{What: what, Limit: limit}, classify.Item, "answer too large")
}

// LimitAnswer returns a reader of r that gives at most limit bytes and
// then, if r holds more, fails with TooLarge(what, limit) from then on;
// an answer of exactly limit bytes reads to its end. Unlike
// io.LimitReader it never passes a cut answer off as a whole one. It
// reads at most one byte past the limit.
func LimitAnswer(r io.Reader, limit int64, what string) io.Reader {
	return &answerReader{r: r, left: limit, limit: limit, what: what}
}

type answerReader struct {
	r     io.Reader
	left  int64
	limit int64
	what  string
	err   error // sticky once the answer proved too large
}

func (a *answerReader) Read(p []byte) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	if a.left <= 0 {
		// At the bound: one byte more says whether the answer is whole.
		var probe [1]byte
		n, err := a.r.Read(probe[:])
		if n > 0 {
			a.err = TooLarge(a.what, a.limit)
			return 0, a.err
		}
		return 0, err
	}
	if int64(len(p)) > a.left {
		p = p[:a.left]
	}
	n, err := a.r.Read(p)
	a.left -= int64(n)
	return n, err
}

// byteSize writes n in the largest binary unit that divides it exactly:
// "16 MiB", "640 KiB", "1000 bytes".
func byteSize(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + " " + u.name
		}
	}
	if n == 1 {
		return "1 byte"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
