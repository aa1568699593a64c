package input

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeItems(t *testing.T, n int) (string, []byte) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"n\": %d, \"pad\": %q}\n", i, strings.Repeat("x", 100))
	}
	path := filepath.Join(t.TempDir(), "items.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, []byte(b.String())
}

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestScanWithMaxItemsReadsAPrefixNotTheFile: `--limit 100000` on a
// ten-million-line input read and hashed all of it before the first call.
func TestScanWithMaxItemsReadsAPrefixNotTheFile(t *testing.T) {
	path, data := writeItems(t, 20_000) // 2.3 MB
	s, err := Scan(t.Context(), path, JSONL, ScanOptions{MaxItems: 10})
	if err != nil {
		t.Fatal(err)
	}
	if s.Items != 10 || s.Complete {
		t.Errorf("Items=%d Complete=%v, want 10 and false", s.Items, s.Complete)
	}
	if s.Bytes <= 0 || s.Bytes > 256<<10 {
		t.Errorf("the scan of 10 items hashed %d bytes of %d: want a prefix of at most a read buffer or so", s.Bytes, len(data))
	}
	if s.SHA256 != hexSHA(data[:s.Bytes]) {
		t.Errorf("SHA256 is not the hash of the first %d bytes", s.Bytes)
	}
	// A later, longer scan checks that prefix in the same pass.
	full, err := Scan(t.Context(), path, JSONL, ScanOptions{PrefixBytes: s.Bytes})
	if err != nil {
		t.Fatal(err)
	}
	if !full.Complete || full.Items != 20_000 || full.SHA256 != hexSHA(data) || full.Bytes != int64(len(data)) {
		t.Errorf("full scan: Items=%d Complete=%v Bytes=%d, want 20000, true, %d and the file's hash", full.Items, full.Complete, full.Bytes, len(data))
	}
	if full.PrefixSHA256 != s.SHA256 {
		t.Errorf("PrefixSHA256 of the first %d bytes = %.12s, want the limited scan's %.12s", s.Bytes, full.PrefixSHA256, s.SHA256)
	}
}

func TestScanWithMaxItemsAtTheEndIsComplete(t *testing.T) {
	path, data := writeItems(t, 5)
	s, err := Scan(t.Context(), path, JSONL, ScanOptions{MaxItems: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Complete || s.Items != 5 || s.SHA256 != hexSHA(data) {
		t.Errorf("MaxItems equal to the file's items: Items=%d Complete=%v, want 5, true and the whole file's hash", s.Items, s.Complete)
	}
}

func TestScanOfACanceledContextStops(t *testing.T) {
	path, _ := writeItems(t, 5000)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Scan(ctx, path, JSONL, ScanOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Scan with a canceled context: err = %v, want context.Canceled", err)
	}
}

// TestScanIsInterruptedWhileAReadWaits: a signal during the input scan was
// honoured only when the scan ended; a read that waits on a pipe must end
// too.
func TestScanIsInterruptedWhileAReadWaits(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "items.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := Scan(ctx, fifo, JSONL, ScanOptions{})
		done <- err
	}()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // returns once Scan has it open
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteString("{\"n\": 1}\n"); err != nil {
		t.Fatal(err)
	}
	cancel() // the writer stays open: without the cancel the read waits forever
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Scan canceled while reading a pipe: err = %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute): // a safety net, not a timing assertion
		t.Fatal("Scan did not return after its context was canceled while a read waited")
	}
}

// TestSkipCountsAsNextDoes: a resume skips the items that have an outcome
// without decoding them; the idx it sees must be the ones Next gives.
func TestSkipCountsAsNextDoes(t *testing.T) {
	inputs := []struct {
		format Format
		text   string
	}{
		{JSONL, "\ufeff{\"a\": 1}\n\n  \nnot json\n[1]\n{\"b\": \"\\u00e9\"}\r\n{\"c\": 3}"},
		{TXT, "one\n\n two\n\xff\nthree\n"},
		{CSV, "id,text\nk1,\"multi\nline\"\n\nk2,x\nk3,\"bad\n"},
	}
	for _, in := range inputs {
		var want []int
		r := NewReader(strings.NewReader(in.text), "in", in.format)
		for {
			it, err := r.Next()
			if err == io.EOF {
				break
			}
			var le *LineError
			if err != nil && !errors.As(err, &le) {
				break
			}
			want = append(want, it.Idx)
		}
		// Skip every other item: the rest must still come with their idx.
		var got []int
		r = NewReader(strings.NewReader(in.text), "in", in.format)
		for {
			if r.NextIdx()%2 == 0 {
				idx, err := r.Skip()
				if err != nil {
					break
				}
				got = append(got, idx)
				continue
			}
			it, err := r.Next()
			if err == io.EOF {
				break
			}
			var le *LineError
			if err != nil && !errors.As(err, &le) {
				break
			}
			got = append(got, it.Idx)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: Skip and Next alternating gave idx %v, Next alone %v", in.format, got, want)
		}
		path := filepath.Join(t.TempDir(), "in."+string(in.format))
		if err := os.WriteFile(path, []byte(in.text), 0o600); err != nil {
			t.Fatal(err)
		}
		full, err1 := Scan(t.Context(), path, in.format, ScanOptions{})
		count, err2 := Scan(t.Context(), path, in.format, ScanOptions{CountOnly: true})
		if err1 != nil || err2 != nil || full.Items != count.Items || full.SHA256 != count.SHA256 {
			t.Errorf("%s: CountOnly scan gave %d items %.8s (%v), full scan %d items %.8s (%v)", in.format, count.Items, count.SHA256, err2, full.Items, full.SHA256, err1)
		}
	}
}
