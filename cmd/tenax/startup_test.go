package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// tenaxInitBudget is what tenax's own packages may allocate, together,
// while they initialise. Every command pays it, `--help` included; 60
// regular expressions compiled at package level once made it 0.55 MB (and
// a GC cycle on every start), where lazy values keep it near 22 KB
// (docs/benchmarks.md, "Start-up").
const tenaxInitBudget = 64 << 10

// TestHelpInitialisesTenaxPackagesLightly: `tenax --help` under
// GODEBUG=inittrace=1, whose per-package allocation figures (not its
// clock times, which depend on the machine) must stay within
// tenaxInitBudget for tenax's own packages. A package-level value that
// compiles, parses or builds something heavy fails here, naming the
// package; make it lazy (sync.OnceValue, internal/lazyregexp) instead.
func TestHelpInitialisesTenaxPackagesLightly(t *testing.T) {
	cmd := exec.Command(tenaxBin, "--help")
	cmd.Env = childEnv("GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tenax --help: %v\n%s", err, stderr.String())
	}
	inits, err := parseInitTrace(&stderr)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	var report strings.Builder
	for _, in := range inits {
		if in.pkg != "github.com/tenaxhq/tenax" && !strings.HasPrefix(in.pkg, "github.com/tenaxhq/tenax/") {
			continue
		}
		total += in.bytes
		fmt.Fprintf(&report, "\n  %-45s %7d bytes %5d allocs", in.pkg, in.bytes, in.allocs)
	}
	if report.Len() == 0 {
		t.Fatalf("inittrace named none of tenax's packages; the trace was:\n%s", stderr.String())
	}
	if total > tenaxInitBudget {
		t.Errorf("tenax's packages allocate %d bytes while they initialise, over the %d-byte budget: "+
			"a package-level value builds something every command pays for, --help included:%s",
			total, tenaxInitBudget, report.String())
	}
}

// packageInit is one line of GODEBUG=inittrace=1: a package's init and
// what it allocated.
type packageInit struct {
	pkg    string
	bytes  int64
	allocs int64
}

// parseInitTrace reads the runtime's lines
// "init PKG @T ms, C ms clock, B bytes, A allocs" and ignores the rest.
func parseInitTrace(r io.Reader) ([]packageInit, error) {
	var out []packageInit
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
			continue
		}
		b, err := strconv.ParseInt(f[7], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("inittrace line %q: bytes: %w", sc.Text(), err)
		}
		a, err := strconv.ParseInt(f[9], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("inittrace line %q: allocs: %w", sc.Text(), err)
		}
		out = append(out, packageInit{pkg: f[1], bytes: b, allocs: a})
	}
	return out, sc.Err()
}

// BenchmarkRootHelp is what cmd/tenax does on every start before a
// command runs, in process: build the cobra tree and print --help. Profile
// it with -cpuprofile to see what a new flag or subcommand adds.
func BenchmarkRootHelp(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if code := execute([]string{"--help"}, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
			b.Fatalf("tenax --help: exit %d", code)
		}
	}
}
