package fix_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/fix"
	"github.com/tenaxhq/tenax/heal"
)

// pytestFailing is pytest's report of four failing tests; pytestBroken
// its report when calc.py no longer imports (exit 2).
const (
	pytestFailing = `============================= test session starts ==============================
collected 4 items

tests/test_calc.py FFFF                                                  [100%]

=================================== FAILURES ===================================
___________________________________ test_add ___________________________________
E       assert -1 == 5
___________________________________ test_sub ___________________________________
E       assert 5 == -1
___________________________________ test_mul ___________________________________
E       assert 7 == 12
___________________________________ test_div ___________________________________
E       ZeroDivisionError: division by zero
=========================== short test summary info ============================
FAILED tests/test_calc.py::test_add - assert -1 == 5
FAILED tests/test_calc.py::test_sub - assert 5 == -1
FAILED tests/test_calc.py::test_mul - assert 7 == 12
FAILED tests/test_calc.py::test_div - ZeroDivisionError: division by zero
============================== 4 failed in 0.02s ===============================
`
	pytestBroken = `============================= test session starts ==============================
collected 0 items / 1 error

==================================== ERRORS ====================================
_____________________ ERROR collecting tests/test_calc.py ______________________
tests/test_calc.py:1: in <module>
    from calc import add, div
E     File "/w/calc.py", line 2
E       return a + b
E   IndentationError: unexpected indent
=========================== short test summary info ============================
ERROR tests/test_calc.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.09s ===============================
`
)

// A fixer edit that made pytest fail at collection (exit 2, "1 error
// during collection") was logged `fixed … [4 fixed]`: the four failing
// tests were absent from the output, so they passed for fixed although
// none ran, and on_worse: revert kept the edit, since one error is fewer
// than four. A check that stops reporting tests is worse.
func TestACollectionErrorIsNotTakenForFixedTests(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{false, true} {
		name := "on_worse revert"
		if keep {
			name = "on_worse keep"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, nil)
			r.write("failing.txt", pytestFailing, 0o644)
			r.write("broken.txt", pytestBroken, 0o644)
			r.write("calc.py", "def add(a, b):\n    return a - b\n", 0o644)
			r.git("add", "-A")
			r.git("commit", "-qm", "pytest")
			check := `if grep -q '^        return' calc.py; then cat broken.txt; exit 2; fi; cat failing.txt; exit 1`
			breakIt := `printf 'def add(a, b):\n        return a + b\n' > calc.py`
			var events []fix.Event
			cfg := fix.Config{
				Name: "collect", Workdir: r.dir, Home: r.home, KeepWorse: keep,
				Check:   fix.Check{Argv: []string{"sh", "-c", check}, Dir: r.dir, Parser: fix.ParserPytest, Timeout: time.Minute},
				Fixer:   fix.ExecFixer{Argv: []string{"sh", "-c", breakIt}, Timeout: time.Minute},
				Budget:  heal.Budget{MaxAttempts: 1},
				OnEvent: func(e fix.Event) { events = append(events, e) },
			}
			res, err := fix.Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			atts := attemptsOf(audit(t, res))
			if len(atts) != 1 {
				t.Fatalf("%d attempts; want 1", len(atts))
			}
			a := atts[0]
			if a.Result == heal.ResultFixed || !strings.Contains(a.Reason, "pytest stopped at collection") {
				t.Errorf("the attempt's result %q, reason %q; want not fixed, and the collection named as why it is worse", a.Result, a.Reason)
			}
			if a.Reverted == keep {
				t.Errorf("reverted %v with KeepWorse %v", a.Reverted, keep)
			}
			b, _ := os.ReadFile(filepath.Join(r.dir, "calc.py"))
			if broken := strings.Contains(string(b), "        return"); broken != keep {
				t.Errorf("calc.py after the run:\n%s(kept: %v)", b, keep)
			}
			var tr heal.Tracker
			if err := json.Unmarshal(res.State.Tracker, &tr); err != nil {
				t.Fatal(err)
			}
			for _, e := range tr.Errors() {
				if strings.HasPrefix(e.Name, "tests/test_calc.py::") && e.Status == heal.StatusFixed {
					t.Errorf("%s is %s; it never ran", e.Name, e.Status)
				}
				if keep && e.Name == "tests/test_calc.py" && !strings.HasPrefix(e.Message, "IndentationError: unexpected indent") {
					t.Errorf("the collection error's message starts %q; want the IndentationError first", firstLineOf(e.Message))
				}
			}
			for _, e := range events {
				if e.Kind == fix.EventResult && e.Counts[heal.StatusFixed] > 0 {
					t.Errorf("the attempt's result was shown with %d fixed", e.Counts[heal.StatusFixed])
				}
			}
		})
	}
}

// The other way round: an edit that fixes the import lets pytest run the
// four tests, which fail. Four errors where there was one are the tests
// seen at last, not the edit's doing: the edit is kept, the collection
// error fixed.
func TestFixingACollectionErrorThatRevealsFailingTestsIsKept(t *testing.T) {
	t.Parallel()
	r := newRepo(t, nil)
	r.write("failing.txt", pytestFailing, 0o644)
	r.write("broken.txt", pytestBroken, 0o644)
	r.write("calc.py", "def add(a, b):\n        return a - b\n", 0o644)
	r.git("add", "-A")
	r.git("commit", "-qm", "pytest")
	check := `if grep -q '^        return' calc.py; then cat broken.txt; exit 2; fi; cat failing.txt; exit 1`
	fixIt := `printf 'def add(a, b):\n    return a - b\n' > calc.py`
	cfg := fix.Config{
		Name: "collect", Workdir: r.dir, Home: r.home,
		Check:  fix.Check{Argv: []string{"sh", "-c", check}, Dir: r.dir, Parser: fix.ParserPytest, Timeout: time.Minute},
		Fixer:  fix.ExecFixer{Argv: []string{"sh", "-c", fixIt}, Timeout: time.Minute},
		Budget: heal.Budget{MaxAttempts: 1},
	}
	res, err := fix.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	atts := attemptsOf(audit(t, res))
	if len(atts) != 1 || atts[0].Reverted || atts[0].Result != heal.ResultFixed {
		t.Fatalf("attempts %+v; want one, fixed and kept", atts)
	}
	if len(res.Remaining) != 4 {
		t.Errorf("%d errors remain; want the 4 failing tests", len(res.Remaining))
	}
}

func firstLineOf(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

func TestTallyReadsTheRunnersOwnTotals(t *testing.T) {
	tests := []struct {
		file    string
		tests   int
		stopped string
	}{
		{"testdata/captures/pytest.txt", 4, ""},
		{"testdata/captures/jest.txt", 3, ""},
		{"testdata/captures/vitest.txt", 3, ""},
		{"testdata/captures/gotest.txt", -1, ""},
		{"../heal/testdata/extract/pytest_collect.txt", 0, "pytest stopped at collection (1 error during collection)"},
		{"../heal/testdata/extract/jest.txt", 5, "the test suite src/broken.test.js failed to run"},
		{"../heal/testdata/extract/gotest_build.txt", -1, "go test ran no test of example.com/calc [build failed]"},
	}
	for _, tc := range tests {
		b, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		got := fix.TallyOf(string(b))
		if got.Tests != tc.tests || !strings.HasPrefix(got.Stopped, tc.stopped) || (tc.stopped == "") != (got.Stopped == "") {
			t.Errorf("%s: %+v; want %d tests, stopped %q", tc.file, got, tc.tests, tc.stopped)
		}
	}
}
