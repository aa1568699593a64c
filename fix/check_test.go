package fix

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestAFailedCheckNoParserReadsQuotesItsMostTellingLine: a check whose
// output no parser could read became an error quoting the output's last
// line, which for go test is always "FAIL" (a package directory with a
// space gave "the check failed (exit status 1): FAIL"). The outputs in
// testdata/fallback were captured from real runs (go 1.26, python 3).
func TestAFailedCheckNoParserReadsQuotesItsMostTellingLine(t *testing.T) {
	tests := []struct {
		name, capture, output, want string
	}{
		{name: "go test, a package directory with a space", capture: "gotest-space-in-package-dir.txt",
			want: `malformed import path "example.com/space/my pkg": invalid char ' '`},
		{name: "go test, outside the main module", capture: "gotest-no-module.txt",
			want: "pattern ./...: directory prefix . does not contain main module or its selected dependencies"},
		{name: "go test, a missing module", capture: "gotest-setup-failed.txt",
			want: "x_test.go:5:1: no required module provides package example.com/nosuch/pkg; to add it:"},
		{name: "go test, vet failed", capture: "gotest-vet-failed.txt",
			want: `./x_test.go:8:40: fmt.Printf format %d has arg "s" of wrong type string`},
		{name: "go test, a panic in init", capture: "gotest-panic-in-init.txt", want: "panic: boom"},
		{name: "go test, TestMain exits", capture: "gotest-testmain-exit.txt", want: "FAIL example.com/tmain 0.002s"},
		{name: "a python traceback", capture: "python-traceback.txt", want: "ZeroDivisionError: division by zero"},
		{name: "a setup failure with no reason", output: "FAIL\texample.com/p [setup failed]\nFAIL\n", want: "FAIL example.com/p [setup failed]"},
		{name: "a tool's summary", output: "checking 3 files\n2 problems found\n", want: "2 problems found"},
		{name: "only FAIL", output: "FAIL\n", want: "FAIL"},
		{name: "nothing", output: "\n\n", want: "no output"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			output := tc.output
			if tc.capture != "" {
				b, err := os.ReadFile(filepath.Join("testdata", "fallback", tc.capture))
				if err != nil {
					t.Fatal(err)
				}
				output = string(b)
			}
			if got := tellingLine(output); got != tc.want {
				t.Errorf("tellingLine:\n%s\n= %q; want %q", output, got, tc.want)
			}
		})
	}

	// And through Run, which quotes it when the parser finds nothing.
	capture := filepath.Join("testdata", "fallback", "gotest-space-in-package-dir.txt")
	res, err := Check{Argv: []string{"sh", "-c", `cat "$0"; exit 1`, capture}, Parser: ParserGoTest}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := `the check failed (exit status 1): malformed import path "example.com/space/my pkg": invalid char ' '`
	if len(res.Errors) != 1 || res.Errors[0].Name != "check" || res.Errors[0].Message != want {
		t.Errorf("Run's errors %+v; want one named check: %s", res.Errors, want)
	}
}
