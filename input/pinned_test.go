package input

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnInputChangedMidRunIsNeverMixedIn: appending two lines mid-run ran
// them past the job's last item, and a file rewritten in place finished
// "completed" with old and new items under the old hash. A reader opened
// on the scan serves only bytes that match it and says where the file
// changed.
func TestAnInputChangedMidRunIsNeverMixedIn(t *testing.T) {
	const items = 20_000 // 2.3 MB: three blocks
	cases := []struct {
		name   string
		change func(t *testing.T, path string, data []byte)
		want   error // io.EOF, or ErrChanged
		what   string
	}{
		{"unchanged", func(*testing.T, string, []byte) {}, io.EOF, ""},
		{"appended", func(t *testing.T, path string, _ []byte) {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("{\"n\": \"new\"}\n{\"n\": \"new\"}\n"); err != nil {
				t.Fatal(err)
			}
		}, ErrChanged, "it grew"},
		{"rewritten in place", func(t *testing.T, path string, data []byte) {
			changed := append([]byte(nil), data...)
			changed[BlockBytes+BlockBytes/2] = '7'
			if err := os.WriteFile(path, changed, 0o600); err != nil {
				t.Fatal(err)
			}
		}, ErrChanged, "its bytes differ"},
		{"truncated", func(t *testing.T, path string, data []byte) {
			if err := os.Truncate(path, int64(len(data))-50); err != nil {
				t.Fatal(err)
			}
		}, ErrChanged, "it is shorter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, data := writeItems(t, items)
			sum, err := Scan(t.Context(), path, JSONL, ScanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := Open(path, JSONL)
			if err != nil {
				t.Fatal(err)
			}
			defer want.Close()
			r, err := OpenScanned(path, JSONL, sum)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			read := 0
			for {
				it, err := r.Next()
				if read == 1 {
					c.change(t, path, data)
				}
				if err != nil {
					if !errors.Is(err, c.want) {
						t.Fatalf("after %d items the reader said %v, want %v", read, err, c.want)
					}
					var ce *ChangedError
					if errors.As(err, &ce) && ce.What != c.what {
						t.Errorf("the change is %q, want %q", ce.What, c.what)
					}
					break
				}
				orig, _ := want.Next()
				if string(it.Raw) != string(orig.Raw) {
					t.Fatalf("item %d is %s, but the scanned input had %s: two inputs mixed", it.Idx, it.Raw, orig.Raw)
				}
				read++
			}
			if c.want == io.EOF && read != items {
				t.Errorf("read %d items of an unchanged input, want %d", read, items)
			}
			if c.what == "it grew" && read != items {
				t.Errorf("read %d items before seeing the input grew, want all %d it had", read, items)
			}
		})
	}
}

// TestACheckedReadReusesItsBlock: each block of a checked input was read
// into new memory (the served rest's capacity shrank below a block), a
// megabyte allocated per megabyte read; a resume's skip of a million
// items spent more on that than on its reads. What a read allocates no
// longer grows with the input.
func TestACheckedReadReusesItsBlock(t *testing.T) {
	allocs := func(blocks int) float64 {
		path := filepath.Join(t.TempDir(), "in.jsonl")
		line := []byte("{\"n\": \"" + strings.Repeat("x", 1000) + "\"}\n")
		if err := os.WriteFile(path, bytes.Repeat(line, blocks*BlockBytes/len(line)), 0o644); err != nil {
			t.Fatal(err)
		}
		sum, err := Scan(t.Context(), path, JSONL, ScanOptions{CountOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		return testing.AllocsPerRun(3, func() {
			r, err := OpenScanned(path, JSONL, sum)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := r.SkipWhile(func(int) bool { return true }); err != io.EOF {
				t.Fatalf("skipping every item: %v, want io.EOF", err)
			}
		})
	}
	if two, six := allocs(2), allocs(6); six > two {
		t.Errorf("reading an input of 2 blocks allocates %.0f times, of 6 blocks %.0f: each block is read into new memory", two, six)
	}
}
