package spec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestParseRefusesWhatIsNotYAMLText(t *testing.T) {
	controls := append(bytes.Repeat([]byte("task: x\n"), 10), bytes.Repeat([]byte{1}, 20)...)
	tests := []struct {
		name string
		src  []byte
		want string
	}{
		{"over the size limit", bytes.Repeat([]byte("#"), MaxBytes+1),
			"job.yaml:1:1: the spec is 1048577 bytes; a spec may be at most 1 MiB (put large data in the input file)"},
		{"far over the size limit", bytes.Repeat([]byte("#"), 3*MaxBytes),
			"job.yaml:1:1: the spec is 3.0 MiB; a spec may be at most 1 MiB (put large data in the input file)"},
		{"a NUL byte", []byte("task:\n  type: exec\x00\n"),
			"job.yaml:1:1: not a YAML spec: the file holds binary data"},
		{"many control characters", controls,
			"job.yaml:1:1: not a YAML spec: the file holds binary data"},
		{"UTF-16 with a byte order mark", []byte("\xff\xfet\x00a\x00s\x00k\x00"),
			"job.yaml:1:1: the spec is UTF-16 text; save it as UTF-8"},
		{"a Latin-1 byte", []byte("task:\n  type: caf\xe9\n"),
			"job.yaml:2:12: the spec is not valid UTF-8 (save it as UTF-8)"},
		{"columns count characters, not bytes", []byte("name: é\xff\n"),
			"job.yaml:1:8: the spec is not valid UTF-8 (save it as UTF-8)"},
		{"a stray control character", []byte("name: a\x07b\ntask: {type: exec, argv: [echo]}\n"),
			"job.yaml:1:8: the spec holds the control character U+0007, which YAML does not allow; remove it"},
		{"a tab indenting a key", []byte("task:\n\ttype: exec\n"),
			"job.yaml:2:1: a tab cannot indent YAML; indent with spaces"},
		{"a tab indenting a list entry", []byte("task:\n  type: exec\n  argv:\n  \t- echo\n"),
			"job.yaml:4:3: a tab cannot indent YAML; indent with spaces"},
		{"a tab separating flow entries", []byte("task: {type: exec,\targv: [echo]}\n"),
			"job.yaml:1:19: a tab cannot separate YAML here; use spaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("job.yaml", tt.src, "/specs", nil)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error:\n got %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestParseAcceptsAUTF8ByteOrderMark(t *testing.T) {
	s := parse(t, "\ufeffname: bom\ntask: {type: exec, argv: [echo]}\n", nil)
	if s.Name != "bom" {
		t.Errorf("name = %q, want bom", s.Name)
	}
}

// TestTokenLimitRefusesSlowShapesBeforeParsing feeds shapes whose parse
// time grows with the square of their size: each must be refused by the
// token limit, at the first token over it.
func TestTokenLimitRefusesSlowShapesBeforeParsing(t *testing.T) {
	var mapping bytes.Buffer
	mapping.WriteString("task:\n  type: exec\n  argv: [echo]\n  env:\n")
	for i := range 20_000 {
		fmt.Fprintf(&mapping, "    V%x: 1\n", i)
	}
	tests := []struct {
		name string
		src  []byte
		want string
	}{
		{"one mapping of 20,000 keys", mapping.Bytes(), "job.yaml:3334:9: "},
		{"nested lists on one line", bytes.Repeat([]byte("- "), 50_000), "job.yaml:1:20001: "},
		{"flow lists side by side", bytes.Repeat([]byte("[]"), 25_000), "job.yaml:1:10001: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("job.yaml", tt.src, "/specs", nil)
			want := tt.want + "the spec is too long: more than 10000 YAML tokens (keys, values, list items); a spec needs far fewer (put large data in the input file)"
			if err == nil || err.Error() != want {
				t.Errorf("error:\n got %v\nwant %s", err, want)
			}
		})
	}
}

// TestDeepFlowNestingIsRefusedBeforeTheTreeIsBuilt: the depth limit was
// met only while decoding the parsed tree, so 9,000 nested lists under
// the token limit were parsed whole first, in time growing with the
// square of the depth (0.6 s here; 20,000 took 10 s and 700 MB before the
// token limit). The nesting is refused from the tokens, at the first
// bracket over the limit.
func TestDeepFlowNestingIsRefusedBeforeTheTreeIsBuilt(t *testing.T) {
	for _, open := range []string{"[", "{a: ", "[{a: "} {
		src := "task: " + strings.Repeat(open, 9_000) + "\n"
		_, err := Parse("job.yaml", []byte(src), "/specs", nil)
		if err == nil || !strings.Contains(err.Error(), "the spec nests deeper than 64 levels") {
			t.Errorf("%q × 9,000: error %v, want the nesting refused", open, err)
		}
	}
	// 64 levels are decoded as ever (and refused for their meaning).
	_, err := Parse("job.yaml", []byte("task: "+strings.Repeat("[", 63)+strings.Repeat("]", 63)+"\n"), "/specs", nil)
	if err == nil || strings.Contains(err.Error(), "nests deeper") {
		t.Errorf("63 levels: error %v, want one about the task's shape, not its depth", err)
	}
}

func TestTokenLimitLeavesRoomForLargeRealSpecs(t *testing.T) {
	var b strings.Builder
	b.WriteString("task:\n  type: exec\n  argv: [echo]\n  env:\n")
	for i := range 2_000 {
		fmt.Fprintf(&b, "    # variable %d\n    V%d: value %d\n", i, i, i)
	}
	if s := parse(t, b.String(), nil); len(s.Task.Env) != 2_000 {
		t.Errorf("%d env variables, want 2000", len(s.Task.Env))
	}
}

func TestErrorsQuoteOnlyAShortEscapedPrefix(t *testing.T) {
	long := strings.Repeat("é\x1b", 600)
	_, err := Parse("job.yaml", []byte(llmTask+"concurrency: {max: \""+strings.ReplaceAll(long, "\x1b", `\e`)+"\"}\n"), "/specs", nil)
	want := `job.yaml:5:20: concurrency.max: expected an integer, got "é\x1bé\x1bé\x1bé\x1bé\x1bé\x1bé\x1bé\x1bé\x1bé\x1bé\x1bé\x1bé\x1bé\x1bé\x1bé\x1bé\x1bé\x1bé\x1bé\x1b"… (1.8 KiB in all)`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n got %v\nwant %s", err, want)
	}
}

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"short", `"short"`},
		{strings.Repeat("a", 40), `"` + strings.Repeat("a", 40) + `"`},
		{strings.Repeat("a", 41), `"` + strings.Repeat("a", 40) + `"… (41 bytes in all)`},
		{strings.Repeat("日", 50), `"` + strings.Repeat("日", 40) + `"… (150 bytes in all)`},
		{"tab\there", `"tab\there"`},
	}
	for _, tt := range tests {
		if got := quote(tt.in); got != tt.want {
			t.Errorf("quote(%.20q…) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestManyProblemsAreCappedWithACount(t *testing.T) {
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "unknown%d: 1\n", i)
	}
	_, err := Parse("job.yaml", []byte(b.String()), "/specs", nil)
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != maxErrors+1 {
		t.Fatalf("got %d problems, want %d and a count: %v", len(errs), maxErrors+1, err)
	}
	if last := errs[maxErrors].Error(); last != "job.yaml:21:1: … and 10 more problems (fix the ones above first)" {
		t.Errorf("last line = %q", last)
	}
}

func TestLoadRefusesAFileOverTheLimitBeforeReadingIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse file: its size says it all, and Load must not read it.
	if err := f.Truncate(10 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Load(path, nil)
	want := path + " is 10.0 GiB; a spec may be at most 1 MiB (put large data in the input file)"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n got %v\nwant %s", err, want)
	}
}

// TestIsFixStopsAtTheLimitsOfASpecsParse: tenax validate asks IsFix which
// kind of spec a file is before parsing it, and IsFix handed the file to
// the YAML library unbounded: 20,000 nested brackets took 2.5 s and
// 674 MB, 100,000 (a 100 KB file) more than 20 minutes and 11.5 GB,
// before the parse that refuses them at 64 levels. It now goes through
// the same limits first, so what it allocates stays near the file's size.
func TestIsFixStopsAtTheLimitsOfASpecsParse(t *testing.T) {
	for _, c := range []struct {
		name string
		src  string
	}{
		{"20,000 levels, past the token limit", "check: {argv: " + strings.Repeat("[", 20_000) + "\n"},
		{"9,000 levels, under the token limit", "fixer: " + strings.Repeat("{a: ", 9_000) + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if IsFix([]byte(c.src)) {
				t.Errorf("a file the spec parse refuses was taken for a fix spec")
			}
			runtime.ReadMemStats(&after)
			if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
				t.Errorf("IsFix allocated %d MiB for a %d-byte file, want it bounded by the spec's limits (under 64 MiB)", got>>20, len(c.src))
			}
		})
	}
	if !IsFix([]byte("check: {argv: [go, test, ./...]}\nfixer: {type: exec, argv: [./fix.sh]}\n")) {
		t.Errorf("a plain fix spec is no longer recognised")
	}
}
