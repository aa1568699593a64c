package input

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readWanted reads every item of data in format f that want takes and
// skips the others, one Skip at a time or (bulk) with SkipWhile, and
// returns what it met: each item read, with its line, and the error that
// ended the read.
func readWanted(t *testing.T, src io.Reader, f Format, want func(int) bool, bulk bool) []string {
	t.Helper()
	r := NewReader(src, "in", f)
	var out []string
	for {
		if !want(r.NextIdx()) {
			var err error
			if bulk {
				err = r.SkipWhile(func(idx int) bool { return !want(idx) })
			} else {
				_, err = r.Skip()
			}
			if err != nil {
				return append(out, fmt.Sprintf("skip: %v", err))
			}
			continue
		}
		it, err := r.Next()
		if err != nil && errors.Is(err, io.EOF) {
			return append(out, "EOF")
		}
		out = append(out, fmt.Sprintf("%d line %d %s %v", it.Idx, r.Line(), it.Raw, err))
		if err != nil && !errors.As(err, new(*LineError)) {
			return out
		}
	}
}

// TestSkipWhileReadsWhatSkipReads: a resume skips its recorded items in
// bulk (SkipWhile, whole buffers of lines at a time) where it called Skip
// for each; the items read between the skips, their idx and line, and the
// end must be what Skip one at a time gives, for blank lines, CRLF, a byte
// order mark, lines longer than the reader's buffer, a last line without
// a newline, bad lines, and every format.
func TestSkipWhileReadsWhatSkipReads(t *testing.T) {
	long := `{"n": "` + strings.Repeat("x", readBufferSize+100) + `"}`
	var many strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&many, "{\"n\": %d}\n", i)
		if i%97 == 0 {
			many.WriteString("  \r\n\n")
		}
	}
	inputs := []struct {
		name   string
		format Format
		data   string
	}{
		{"jsonl", JSONL, "{\"n\": 0}\n{\"n\": 1}\n{\"n\": 2}\n"},
		{"blank lines and CRLF", JSONL, "\n{\"n\": 0}\r\n \t\r\n{\"n\": 1}\n\n\n{\"n\": 2}\r\n"},
		{"byte order mark", JSONL, "\uFEFF{\"n\": 0}\n{\"n\": 1}\n"},
		{"no newline at the end", JSONL, "{\"n\": 0}\n{\"n\": 1}"},
		{"a blank last line without a newline", JSONL, "{\"n\": 0}\n   "},
		{"a bad line", JSONL, "{\"n\": 0}\nnot json\n{\"n\": 2}\n"},
		{"lines longer than the buffer", JSONL, "{\"n\": 0}\n" + long + "\n{\"n\": 2}\n" + long},
		{"many lines, many buffers", JSONL, many.String()},
		{"txt", TXT, "a\n\nb\r\nc"},
		{"csv", CSV, "n,s\n1,\"a\nb\"\n2,c\n3,d\n"},
		{"empty", JSONL, ""},
	}
	wants := map[string]func(int) bool{
		"nothing":            func(int) bool { return false },
		"everything":         func(int) bool { return true },
		"every third":        func(idx int) bool { return idx%3 == 1 },
		"the first and 4000": func(idx int) bool { return idx == 0 || idx == 4000 },
		"from the second":    func(idx int) bool { return idx >= 2 },
	}
	for _, in := range inputs {
		for name, want := range wants {
			t.Run(in.name+"/"+name, func(t *testing.T) {
				one := readWanted(t, strings.NewReader(in.data), in.format, want, false)
				bulk := readWanted(t, strings.NewReader(in.data), in.format, want, true)
				if strings.Join(one, "\n") != strings.Join(bulk, "\n") {
					t.Fatalf("Skip one at a time:\n%s\nSkipWhile:\n%s", strings.Join(one, "\n"), strings.Join(bulk, "\n"))
				}
			})
		}
	}
}

// TestSkipWhileStillChecksTheScannedInput: an input appended to or
// rewritten after its scan stops a run that skips every item in bulk, as
// it stopped one that skipped them one at a time: the bulk skip reads
// every block through the same check.
func TestSkipWhileStillChecksTheScannedInput(t *testing.T) {
	var data bytes.Buffer
	for i := range 300_000 { // 3.5 MB: four blocks
		fmt.Fprintf(&data, "{\"n\": %d}\n", i)
	}
	cases := map[string]func([]byte) []byte{
		"unchanged":         func(b []byte) []byte { return b },
		"appended":          func(b []byte) []byte { return append(b, "{\"n\": \"new\"}\n"...) },
		"rewritten in part": func(b []byte) []byte { c := bytes.Clone(b); c[BlockBytes*2+5] = '7'; return c },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "in.jsonl")
			if err := os.WriteFile(path, data.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			sum, err := Scan(t.Context(), path, JSONL, ScanOptions{CountOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, change(data.Bytes()), 0o644); err != nil {
				t.Fatal(err)
			}
			var ends [2]string
			for i, bulk := range []bool{false, true} {
				r, err := OpenScanned(path, JSONL, sum)
				if err != nil {
					t.Fatal(err)
				}
				if bulk {
					err = r.SkipWhile(func(int) bool { return true })
				} else {
					for err == nil {
						_, err = r.Skip()
					}
				}
				r.Close()
				ends[i] = fmt.Sprintf("%v at idx %d", err, r.NextIdx())
			}
			if ends[0] != ends[1] {
				t.Fatalf("skipping every item one at a time ended %s; in bulk %s", ends[0], ends[1])
			}
			if name != "unchanged" && !strings.Contains(ends[1], "changed") {
				t.Fatalf("skipping every item of an input %s ended %s, want the change found", name, ends[1])
			}
		})
	}
}

// FuzzSkipWhile: skipping in bulk reads what skipping one item at a time
// reads, whatever the input and whichever items are wanted.
func FuzzSkipWhile(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n\n{\"b\":[1,2]}\r\n  \n{}"), uint8(3))
	f.Add([]byte("\uFEFF{\"id\":\"x\"}\r\n\r\n[1]\n"), uint8(1))
	f.Add([]byte("{\"a\":\"\xff\"}\nnot json\n \t"), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, every uint8) {
		want := func(idx int) bool { return every > 0 && idx%int(every) == 0 }
		for _, format := range []Format{JSONL, TXT} {
			one := readWanted(t, bytes.NewReader(data), format, want, false)
			bulk := readWanted(t, bytes.NewReader(data), format, want, true)
			if strings.Join(one, "\n") != strings.Join(bulk, "\n") {
				t.Fatalf("%s, Skip one at a time:\n%s\nSkipWhile:\n%s", format, strings.Join(one, "\n"), strings.Join(bulk, "\n"))
			}
		}
	})
}

// idxSeen reads data in format f with read (Next, Skip, or SkipWhile of
// everything) and returns the idx of every item it met and the end's
// error.
func idxSeen(data []byte, f Format, read string) ([]int, error) {
	r := NewReader(bytes.NewReader(data), "in", f)
	r.maxLine = 64
	var seen []int
	for {
		switch read {
		case "Next":
			it, err := r.Next()
			if err != nil && !errors.As(err, new(*LineError)) {
				return seen, err
			}
			seen = append(seen, it.Idx)
		case "Skip":
			idx, err := r.Skip()
			if err != nil {
				return seen, err
			}
			seen = append(seen, idx)
		case "SkipWhile":
			err := r.SkipWhile(func(int) bool { return true })
			for i := range r.NextIdx() {
				seen = append(seen, i)
			}
			return seen, err
		}
	}
}

// TestAnOverLongBlankLineIsAnItemToSkipAsToNext: a line over the line
// limit whose first limit's worth of bytes is blank was a bad item to
// Next but a blank line to Skip and SkipWhile, so a resume that skipped
// past it gave every later item the idx of the one before it: records
// and inputs mismatched, unseen by the input's hash.
func TestAnOverLongBlankLineIsAnItemToSkipAsToNext(t *testing.T) {
	spaces := strings.Repeat(" ", 100)
	for _, data := range []string{
		"{\"n\": 0}\n" + spaces + "{\"n\": 1}\n{\"n\": 2}\n",
		"{\"n\": 0}\n" + spaces + "\n{\"n\": 2}\n",
		"{\"n\": 0}\n" + spaces + "\r\n{\"n\": 2}",
		spaces,
	} {
		for _, f := range []Format{JSONL, TXT} {
			want, wantErr := idxSeen([]byte(data), f, "Next")
			for _, read := range []string{"Skip", "SkipWhile"} {
				got, err := idxSeen([]byte(data), f, read)
				if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Errorf("%s %q: %s met items %v (%v), Next %v (%v)", f, data, read, got, err, want, wantErr)
				}
			}
		}
	}
}

// FuzzSkipAgreesWithNext: whatever the input, Skip and SkipWhile count
// the items Next does, with the same idx, under a small line limit.
func FuzzSkipAgreesWithNext(f *testing.F) {
	f.Add([]byte("{\"n\": 0}\n" + strings.Repeat(" ", 100) + "{\"n\": 1}\n"))
	f.Add([]byte("\n\r\n{}\n" + strings.Repeat("\t", 70) + "\n[1]\nnot json"))
	f.Add([]byte("a\n\nb\r\n" + strings.Repeat("x", 65)))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range []Format{JSONL, TXT} {
			want, wantErr := idxSeen(data, format, "Next")
			for _, read := range []string{"Skip", "SkipWhile"} {
				got, err := idxSeen(data, format, read)
				if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("%s: %s met items %v (%v), Next %v (%v)", format, read, got, err, want, wantErr)
				}
			}
		}
	})
}
