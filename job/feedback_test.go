package job

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFeedbackNamesFilesRelativeToTheSpec: a validation error is what the
// heal loop sends to the provider, so it names the schema and the check
// command as the spec wrote them, never by a local absolute path (an
// inline schema once showed up as …/inline-schema.json, a file that does
// not exist).
func TestFeedbackNamesFilesRelativeToTheSpec(t *testing.T) {
	for _, tt := range []struct {
		name, validate, want string
	}{
		{"inline schema", "  json_schema: {type: object, required: [es]}\n", "validate.json_schema (inline)"},
		{"schema file", "  json_schema: schemas/out.json\n", "schemas/out.json"},
		{"check command", "  command: [./check.sh]\n", "./check.sh"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "schemas"), 0o755); err != nil {
				t.Fatal(err)
			}
			files := map[string]string{
				"schemas/out.json": `{"type": "object", "required": ["es"]}`,
				"check.sh":         "#!/bin/sh\necho 'missing es' >&2\nexit 1\n",
				"job.yaml":         "task:\n  type: exec\n  argv: [echo, hi]\nvalidate:\n" + tt.validate,
			}
			for name, content := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			s, err := LoadSpec(filepath.Join(dir, "job.yaml"), nil)
			if err != nil {
				t.Fatal(err)
			}
			v, err := buildValidator(s)
			if err != nil {
				t.Fatal(err)
			}
			verr := v.Validate(t.Context(), json.RawMessage(`{"en": "cat"}`))
			if verr == nil {
				t.Fatal("the output passed")
			}
			if msg := verr.Error(); strings.Contains(msg, dir) || !strings.Contains(msg, tt.want) {
				t.Errorf("the error says %q; want %q and no local directory", msg, tt.want)
			}
		})
	}
}
