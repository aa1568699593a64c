package task_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
)

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestLimitAnswerPassesAWholeAnswerAndRefusesALongerOne: an answer up to
// the bound reads whole; one byte more is an item failure naming the
// bound and its spec key, and no more than one byte past the bound is
// ever read from the source.
func TestLimitAnswerPassesAWholeAnswerAndRefusesALongerOne(t *testing.T) {
	for _, tc := range []struct {
		name    string
		size    int64
		limit   int64
		wantErr string
	}{
		{"empty", 0, 10, ""},
		{"under", 9, 10, ""},
		{"exactly", 10, 10, ""},
		{"one over", 11, 10, "answer over 10 bytes (task.max_answer_bytes)"},
		{"far over", 1 << 30, 2 << 20, "answer over 2 MiB (task.max_answer_bytes)"},
		{"KiB", 1 << 20, 640 << 10, "answer over 640 KiB (task.max_answer_bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &countingReader{r: io.LimitReader(zeros{}, tc.size)}
			got, err := io.ReadAll(task.LimitAnswer(src, tc.limit, "answer"))
			if tc.wantErr == "" {
				if err != nil || int64(len(got)) != tc.size {
					t.Fatalf("read %d bytes, error %v; want all %d and no error", len(got), err, tc.size)
				}
				return
			}
			var tooLarge *task.AnswerTooLargeError
			if !errors.As(err, &tooLarge) || err.Error() != tc.wantErr {
				t.Fatalf("error %v; want an *AnswerTooLargeError %q", err, tc.wantErr)
			}
			if d := classify.Classify(err); d.Class != classify.Item {
				t.Errorf("classified %v; want item", d)
			}
			if int64(len(got)) != tc.limit || src.n > tc.limit+1 {
				t.Errorf("handed on %d bytes and read %d from the source; want %d handed on and at most one more read", len(got), src.n, tc.limit)
			}
		})
	}
}

// TestLimitAnswerKeepsFailingOnceTooLarge: a caller that reads again after
// the error gets it again, never the rest of the answer.
func TestLimitAnswerKeepsFailingOnceTooLarge(t *testing.T) {
	r := task.LimitAnswer(iotest.OneByteReader(strings.NewReader("abcdef")), 3, "stdout")
	if _, err := io.ReadAll(r); err == nil {
		t.Fatal("read 6 bytes through a bound of 3 without an error")
	}
	n, err := r.Read(make([]byte, 8))
	if n != 0 || err == nil || err.Error() != "stdout over 3 bytes (task.max_answer_bytes)" {
		t.Errorf("read again: %d bytes, error %v; want 0 and the same error", n, err)
	}
}

// zeros is an endless stream of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
