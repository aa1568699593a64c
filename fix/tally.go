package fix

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/internal/lazyregexp"
)

// Tally is what the test runner itself says about one run of the check,
// beside the errors tenax extracts from it. The errors alone cannot tell
// a test that passed from one that never ran: when an edit breaks an
// import, pytest stops at collection with one error, and the four tests
// that failed before are simply absent. The tally is how a fix run knows
// that such a check reports less, not better.
type Tally struct {
	// Tests is how many tests the runner reports having run (passed,
	// failed, skipped…); -1 when its output does not say.
	Tests int `json:"tests"`
	// Stopped, when set, says why the runner stopped before it ran its
	// tests: a collection error, a package that did not build.
	Stopped string `json:"stopped,omitempty"`
}

var (
	// pytest's last line: "==== 2 failed, 1 passed, 1 error in 0.01s ====".
	pytestTotals = lazyregexp.New(`^=+ (.+?) in [0-9.]+s(?: \([0-9:]+\))? =+$`)
	// "!!!! Interrupted: 1 error during collection !!!!".
	pytestCollection = lazyregexp.New(`Interrupted: (\d+ errors?) during collection`)
	// "FAIL	example.com/calc [build failed]".
	goNotRun = lazyregexp.New(`^FAIL\s+(\S+)\s+\[(build|setup) failed\]`)
	// jest's "Tests:       1 failed, 3 passed, 4 total".
	jestTotals = lazyregexp.New(`^Tests:\s+.*?(\d+) total`)
	// vitest's "      Tests  1 failed | 3 passed (4)" or "Tests  no tests".
	vitestTotals  = lazyregexp.New(`^\s*Tests\s+.*\((\d+)\)\s*$`)
	vitestNoTests = lazyregexp.New(`^\s*Tests\s+no tests\s*$`)
	// jest's " FAIL  src/a.test.js" then "  ● Test suite failed to run";
	// vitest's " FAIL  src/a.test.js [ src/a.test.js ]".
	jestFailFile   = lazyregexp.New(`^ FAIL\s+(\S+)`)
	jestSuiteStuck = lazyregexp.New(`^\s*● Test suite failed to run`)
	vitestSuiteNot = lazyregexp.New(`^ FAIL\s+(\S+) \[ `)
)

// TallyOf reads the runner's own totals from a check's output. Every
// runner's lines are looked for whatever the parser: their forms are
// specific enough not to be mistaken for one another.
func TallyOf(output string) Tally {
	t := Tally{Tests: -1}
	var notBuilt []string
	failFile := "?"
	for _, line := range strings.Split(output, "\n") {
		line = strings.TrimRight(line, "\r")
		if m := pytestTotals().FindStringSubmatch(line); m != nil {
			if n, ok := pytestRan(m[1]); ok {
				t.Tests = n
			}
		}
		if m := pytestCollection().FindStringSubmatch(line); m != nil {
			t.Stopped = fmt.Sprintf("pytest stopped at collection (%s during collection) and ran no test", m[1])

		}
		if m := goNotRun().FindStringSubmatch(line); m != nil {
			notBuilt = append(notBuilt, m[1]+" ["+m[2]+" failed]")
		}
		if m := jestTotals().FindStringSubmatch(line); m != nil {
			t.Tests, _ = strconv.Atoi(m[1])
		}
		if m := vitestTotals().FindStringSubmatch(line); m != nil {
			t.Tests, _ = strconv.Atoi(m[1])
		}
		if vitestNoTests().MatchString(line) {
			t.Tests = 0
		}
		if m := jestFailFile().FindStringSubmatch(line); m != nil {
			failFile = m[1]
		}
		if t.Stopped == "" && jestSuiteStuck().MatchString(line) {
			t.Stopped = fmt.Sprintf("the test suite %s failed to run", failFile)
		}
		if m := vitestSuiteNot().FindStringSubmatch(line); m != nil && t.Stopped == "" {
			t.Stopped = fmt.Sprintf("the test suite %s failed to run", m[1])
		}
	}
	if t.Stopped != "" && t.Tests > 0 && pytestCollection().MatchString(output) {
		t.Tests = 0 // the totals' errors are the collection's
	}
	if len(notBuilt) > 0 && t.Stopped == "" {
		t.Stopped = "go test ran no test of " + listShort(notBuilt, 3)
	}
	return t
}

// pytestRan counts the tests in pytest's totals ("2 failed, 1 passed, 1
// error"); errors count, as a test whose fixture failed is a test, except
// when collection stopped (then Stopped says so).
func pytestRan(totals string) (int, bool) {
	if strings.HasPrefix(totals, "no tests ran") {
		return 0, true
	}
	n, any := 0, false
	for _, part := range strings.Split(totals, ", ") {
		count, word, ok := strings.Cut(strings.TrimSpace(part), " ")
		k, err := strconv.Atoi(count)
		if !ok || err != nil {
			continue
		}
		switch word {
		case "passed", "failed", "skipped", "xfailed", "xpassed", "error", "errors":
			n += k
			any = true
		}
	}
	return n, any
}

// lessThan says how cur reports less than prev, or "": the runner stopped
// before its tests where it had run them, or ran fewer tests. The errors
// missing from such a check were not fixed; they were not looked at.
func (cur Tally) lessThan(prev *Tally) string {
	if prev == nil {
		return ""
	}
	switch {
	case cur.Stopped != "" && prev.Stopped == "":
		return cur.Stopped
	case prev.Tests > 0 && cur.Tests >= 0 && cur.Tests < prev.Tests:
		return fmt.Sprintf("the check ran %d of the %s it ran before", cur.Tests, plural(prev.Tests, "test"))
	}
	return ""
}

// moreThan reports whether cur looked at more than prev: it ran tests
// where prev stopped before them, or ran more of them.
func (cur Tally) moreThan(prev *Tally) bool {
	if prev == nil || cur.Stopped != "" {
		return false
	}
	return prev.Stopped != "" || (prev.Tests >= 0 && cur.Tests > prev.Tests)
}

// withUnjudged adds to errs those of prev that a check reporting less
// did not look at, so that they keep their status instead of passing for
// fixed.
func withUnjudged(errs, prev []heal.Observed) []heal.Observed {
	out := append([]heal.Observed(nil), errs...)
	seen := fingerprintSet(errs)
	for _, o := range prev {
		if !seen[heal.Fingerprint(o.Name, o.Message)] {
			out = append(out, o)
		}
	}
	return out
}
