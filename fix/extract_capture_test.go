package fix

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tenaxhq/tenax/heal"
)

// TestExtractRealCaptures reads outputs captured from real runs of each
// tool on the broken projects in testdata/projects (regenerate them with
// testdata/capture.sh) and checks the errors each yields, with the named
// parser and with auto detection.
func TestExtractRealCaptures(t *testing.T) {
	greet := func(name string) heal.Observed {
		return heal.Observed{Name: "TestGreet/" + name, Message: `calc_test.go:15: Greet("` + name + `") = "Hello ` + name + `", want "Hello, ` + name + `!"`}
	}
	goTest := []heal.Observed{
		{Name: "TestAdd", Message: "calc_test.go:7: Add(2, 3) = -1, want 5"},
		greet("Ann"), greet("Bo"),
		{Name: "TestDiv", Message: "panic: runtime error: integer divide by zero"},
	}
	js := func(sep string) []heal.Observed {
		return []heal.Observed{
			{Name: "calc" + sep + "adds numbers"},
			{Name: "calc" + sep + "splits undefined", Message: "TypeError: Cannot read properties of undefined (reading 'split')"},
		}
	}
	jest, vitest := js(" › "), js(" > ")
	jest[0].Message = "expect(received).toBe(expected) // Object.is equality\nExpected: 5\nReceived: -1"
	vitest[0].Message = "AssertionError: expected -1 to be 5 // Object.is equality"
	tsc := func(pretty bool) []heal.Observed {
		at := func(l, c string) string {
			if pretty {
				return "src/calc.ts:" + l + ":" + c + " - "
			}
			return "src/calc.ts(" + l + "," + c + "): "
		}
		return []heal.Observed{
			{Name: "src/calc.ts", Message: at("5", "7") + "error TS2322: Type 'number' is not assignable to type 'string'."},
			{Name: "src/calc.ts", Message: at("6", "30") + "error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'."},
			{Name: "src/calc.ts", Message: at("9", "14") + "error TS2741: Property 'age' is missing in type '{ name: string; }' but required in type 'User'."},
		}
	}
	const eslintFile = "eslint/src/calc.js"
	tests := []struct {
		capture, parser string
		want            []heal.Observed
	}{
		{"gotest", ParserGoTest, goTest},
		{"gotest_verbose", ParserGoTest, goTest},
		{"pytest", ParserPytest, []heal.Observed{
			{Name: "tests/test_calc.py::test_add", Message: "assert -1 == 5"},
			{Name: "tests/test_calc.py::TestDiv::test_zero", Message: "ZeroDivisionError: division by zero"},
			{Name: "tests/test_calc.py::test_fixture", Message: "RuntimeError: fixture exploded"},
		}},
		{"jest", ParserJest, jest},
		{"vitest", ParserVitest, vitest},
		{"tsc", ParserTSC, tsc(false)},
		{"tsc_pretty", ParserTSC, tsc(true)},
		{"eslint", ParserESLint, []heal.Observed{
			{Name: eslintFile, Message: eslintFile + ":2:9: error: 'unused' is assigned a value but never used (no-unused-vars)"},
			{Name: eslintFile, Message: eslintFile + ":3:9: error: Expected '===' and instead saw '==' (eqeqeq)"},
			{Name: eslintFile, Message: eslintFile + ":4:17: error: 'undfined' is not defined (no-undef)"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.capture, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "captures", tc.capture+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			for _, parser := range []string{tc.parser, ParserAuto} {
				if got := Extract(parser, string(b)); !reflect.DeepEqual(got, tc.want) {
					t.Errorf("parser %s extracted\n%#v\nwant\n%#v", parser, got, tc.want)
				}
			}
		})
	}
}

// TestSameMessageInSeveralTestsIsOneGroup: go test's TestGreet/Ann and
// TestGreet/Bo fail with one message but different values; they are two
// errors (two fingerprints) in one group.
func TestSameMessageInSeveralTestsIsOneGroup(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "captures", "gotest.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tr := heal.NewTracker(heal.Budget{})
	tr.Observe(Extract(ParserGoTest, string(b)))
	gs := Groups(tr.Errors())
	if len(gs) != 1 || len(gs[0].Errors) != 2 || gs[0].Errors[0].Name != "TestGreet/Ann" || gs[0].Errors[1].Name != "TestGreet/Bo" {
		t.Fatalf("groups %+v; want one group of TestGreet/Ann and TestGreet/Bo", gs)
	}
	if gs[0].Errors[0].Fingerprint == gs[0].Errors[1].Fingerprint {
		t.Error("the two subtests share a fingerprint; each is its own error")
	}
}
