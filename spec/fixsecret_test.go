package spec_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/spec"
)

// validate printed a check.env secret: a value expanded into check.env is
// a secret whatever its variable's name, as one in fixer.env is.
func TestFixCheckEnvSecretsAreRedacted(t *testing.T) {
	tests := []struct{ name, variable string }{
		{"a variable named like a secret", "DB_PASSWORD"},
		{"a variable named like anything", "DATABASE_URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const value = "pg-hunter2-value"
			env := func(k string) (string, bool) { return value, k == tc.variable }
			src := "check:\n  argv: [./check.sh]\n  env: {DB: \"${" + tc.variable + "}\"}\nfixer: {type: exec, argv: [./fix.sh]}\n"
			f, err := spec.ParseFix("fix.yaml", []byte(src), t.TempDir(), env)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(f.Secrets(), value) {
				t.Errorf("secrets %q; want the value expanded into check.env", f.Secrets())
			}
			y, err := f.RedactedYAML()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(y), value) {
				t.Errorf("the resolved fix spec shows check.env's secret:\n%s", y)
			}
			if got := f.Redact("connect " + value + " failed"); got != "connect [redacted] failed" {
				t.Errorf("Redact = %q; want the value replaced", got)
			}
		})
	}
}
