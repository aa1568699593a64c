package heal

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func readSample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "extract", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestExtractSamples(t *testing.T) {
	tests := []struct {
		file    string
		extract func(string) []Observed
		want    []Observed
	}{
		{"gotest.txt", ExtractGoTest, []Observed{
			{"TestParse", "parse_test.go:42: Parse(\"1+\") = <nil>, want error\nparse_test.go:48: got 3, want 4"},
			{"TestTable/empty_input", "table_test.go:19: Sum([]) = 1, want 0"},
			{"TestPanics", "panic: runtime error: index out of range [5] with length 3"},
		}},
		{"gotest_verbose.txt", ExtractGoTest, []Observed{
			{"TestDivide", "divide_test.go:21: Divide(1, 0): got 0, want error"},
			{"TestRound/half_up", "round_test.go:33: Round(2.5) = 2, want 3"},
		}},
		{"gotest_build.txt", ExtractGoTest, []Observed{
			{"./calc_test.go", "./calc_test.go:9:2: undefined: Foo"},
			{"./calc_test.go", `./calc_test.go:12:9: cannot use "x" (untyped string constant) as int value in return statement`},
		}},
		{"gotest_timeout.txt", ExtractGoTest, []Observed{
			{"TestSlow", "panic: test timed out after 2s"},
		}},
		{"pytest.txt", ExtractPytest, []Observed{
			{"tests/test_calc.py::test_add", "assert 3 == 4"},
			{"tests/test_calc.py::TestDiv::test_zero", "ZeroDivisionError: division by zero"},
		}},
		{"pytest_collect.txt", ExtractPytest, []Observed{
			{"tests/test_broken.py", "ModuleNotFoundError: No module named 'requests'"},
		}},
		// An edit that broke an import was headed `File "…/calc.py", line 2`.
		{"pytest_collect_indent.txt", ExtractPytest, []Observed{
			{"tests/test_calc.py", "IndentationError: unexpected indent\nFile \"/home/u/proj/calc.py\", line 2\nreturn a + b"},
		}},
		{"jest.txt", ExtractJest, []Observed{
			{"Math › adds numbers", "expect(received).toBe(expected) // Object.is equality\nExpected: 4\nReceived: 3"},
			{"Math › handles undefined", "TypeError: Cannot read properties of undefined (reading 'length')"},
			{"src/broken.test.js › Test suite failed to run", "Cannot find module './missing' from 'src/broken.test.js'"},
		}},
		{"vitest.txt", ExtractJest, []Observed{
			{"Math > adds numbers", "AssertionError: expected 3 to be 4 // Object.is equality"},
		}},
		{"tsc.txt", ExtractTSC, []Observed{
			{"src/index.ts", "src/index.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'."},
			{"src/util.ts", "src/util.ts(10,15): error TS2339: Property 'foo' does not exist on type 'Bar'."},
			{"src/util.ts", "src/util.ts(14,5): error TS2345: Argument of type '{ id: string; }' is not assignable to parameter of type 'User'.\nProperty 'name' is missing in type '{ id: string; }' but required in type 'User'."},
		}},
		{"tsc_pretty.txt", ExtractTSC, []Observed{
			{"src/index.ts", "src/index.ts:3:7 - error TS2322: Type 'string' is not assignable to type 'number'."},
			{"tsc", "error TS5083: Cannot read file '/home/u/proj/tsconfig.base.json'."},
		}},
		{"eslint.txt", ExtractESLint, []Observed{
			{"/home/u/proj/src/app.js", "/home/u/proj/src/app.js:3:7: error: 'x' is assigned a value but never used (no-unused-vars)"},
			{"/home/u/proj/src/app.js", "/home/u/proj/src/app.js:12:14: error: Missing semicolon (semi)"},
			{"/home/u/proj/src/util.js", "/home/u/proj/src/util.js:1:10: error: Parsing error: Unexpected token {"},
		}},
		{"generic.txt", ExtractGeneric, []Observed{
			{"main.c", "main.c:12:5: error: implicit declaration of function 'foo' [-Wimplicit-function-declaration]"},
			{"lib/util.py", `lib/util.py:40: error: Incompatible return value type (got "str", expected "int")  [return-value]`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			out := readSample(t, tt.file)
			if got := tt.extract(out); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("explicit extractor:\n got  %q\n want %q", got, tt.want)
			}
			if got := Extract(out); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Extract detected another tool:\n got  %q\n want %q", got, tt.want)
			}
		})
	}
}

func TestExtractEdgeCases(t *testing.T) {
	tests := []struct {
		name    string
		output  string
		extract func(string) []Observed
		want    []Observed
	}{
		{
			name:    "ansi colors are ignored",
			output:  "\x1b[31m--- FAIL: TestX (0.00s)\x1b[0m\n    x_test.go:3: \x1b[1mboom\x1b[0m\nFAIL\n",
			extract: Extract,
			want:    []Observed{{"TestX", "x_test.go:3: boom"}},
		},
		{
			name:    "go test failure without a log line",
			output:  "--- FAIL: TestQuiet (0.00s)\nFAIL\nFAIL\tx\t0.001s\n",
			extract: ExtractGoTest,
			want:    []Observed{{"TestQuiet", "--- FAIL: TestQuiet"}},
		},
		{
			name:    "pytest sections without a summary",
			output:  "=================================== FAILURES ===================================\n___________________________________ test_one ___________________________________\n\n    def test_one():\n>       assert f() == 2\nE       assert 1 == 2\n\nt.py:2: AssertionError\n========================= 1 failed in 0.01s ==========================\n",
			extract: ExtractPytest,
			want:    []Observed{{"test_one", "assert 1 == 2"}},
		},
		{
			name:    "pytest summary without a reason takes the section's E lines",
			output:  "___ test_b ___\nE   KeyError: 'x'\n=== short test summary info ===\nFAILED t.py::test_b\n",
			extract: ExtractPytest,
			want:    []Observed{{"t.py::test_b", "KeyError: 'x'"}},
		},
		{
			name:    "eslint warnings count when there is no error",
			output:  "\nsrc/a.js\n  2:1  warning  Unexpected console statement  no-console\n\n✖ 1 problem (0 errors, 1 warning)\n",
			extract: Extract,
			want:    []Observed{{"src/a.js", "src/a.js:2:1: warning: Unexpected console statement (no-console)"}},
		},
		{
			name:    "generic warnings count when there is no error",
			output:  "x.c:1:2: warning: unused\nx.c:1:1: note: here\n",
			extract: ExtractGeneric,
			want:    []Observed{{"x.c", "x.c:1:2: warning: unused"}, {"x.c", "x.c:1:1: note: here"}},
		},
		{
			name:    "timestamps and prose are not locations",
			output:  "15:04:05: starting\nError: 3 things failed: see log\n2024/01/02 10:00:00 done\n",
			extract: Extract,
			want:    nil,
		},
		{
			name:    "windows paths",
			output:  `C:\src\app\main.go:7:3: undefined: x` + "\n",
			extract: Extract,
			want:    []Observed{{`C:\src\app\main.go`, `C:\src\app\main.go:7:3: undefined: x`}},
		},
		{
			name:    "exact duplicates count once",
			output:  "a.go:1:1: boom\na.go:1:1: boom\n",
			extract: Extract,
			want:    []Observed{{"a.go", "a.go:1:1: boom"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.extract(tt.output); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func FuzzExtract(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "extract", "*.txt"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, output string) {
		got := Extract(output)
		seen := map[Observed]bool{}
		for _, o := range got {
			if o.Name == "" || o.Message == "" {
				t.Fatalf("Extract returned an empty name or message: %q", o)
			}
			if seen[o] {
				t.Fatalf("Extract returned %q twice", o)
			}
			seen[o] = true
		}
		if again := Extract(output); !reflect.DeepEqual(again, got) {
			t.Fatal("Extract is not deterministic")
		}
		for _, extract := range []func(string) []Observed{ExtractGoTest, ExtractPytest, ExtractJest, ExtractTSC, ExtractESLint, ExtractGeneric} {
			extract(output)
		}
	})
}

// pytest cuts a short-summary reason to the terminal's width; the fix loop
// kept `assert ('1', '10'...` although the test's E line held it whole.
func TestPytestTruncatedSummaryReasonGivesWayToTheFullELine(t *testing.T) {
	section := "=================================== FAILURES ===================================\n" +
		"__________________________________ test_split __________________________________\n\n" +
		"    def test_split():\n>       assert split('1,10') == ('1', '2')\n" +
		"E       AssertionError: assert ('1', '10') == ('1', '2')\n" +
		"E         At index 1 diff: '10' != '2'\n\n" +
		"tests/test_split.py:4: AssertionError\n"
	summary := "=========================== short test summary info ============================\n"
	tests := []struct {
		name   string
		output string
		want   string
	}{
		{"a cut reason takes the E lines", section + summary + "FAILED tests/test_split.py::test_split - assert ('1', '10'...\n",
			"AssertionError: assert ('1', '10') == ('1', '2')\nAt index 1 diff: '10' != '2'"},
		{"a whole reason is kept", section + summary + "FAILED tests/test_split.py::test_split - AssertionError: assert ('1', '10') == ('1', '2')\n",
			"AssertionError: assert ('1', '10') == ('1', '2')"},
		{"a cut reason without a section stays", summary + "FAILED tests/test_split.py::test_split - assert ('1', '10'...\n",
			"assert ('1', '10'..."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ExtractPytest(tc.output)
			want := []Observed{{"tests/test_split.py::test_split", tc.want}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("extracted %q; want %q", got, want)
			}
		})
	}
}
