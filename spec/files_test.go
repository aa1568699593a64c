package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles writes files (path → content) under dir, creating dir; a
// path ending in "/" is a directory, and content starting with "#!" is
// executable.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadChecksTheFilesTheSpecNames(t *testing.T) {
	const exec = "task:\n  type: exec\n  argv: [echo]\n"
	tests := []struct {
		name  string
		spec  string
		files map[string]string
		// want is the error with the spec's directory as $DIR; "" means
		// the spec loads.
		want string
	}{
		{"schema file missing", exec + "validate:\n  json_schema: schema.json\n", nil,
			"job.yaml:5:16: validate.json_schema: schema file schema.json not found ($DIR/schema.json)"},
		{"schema path is a directory", exec + "validate:\n  json_schema: schemas\n", map[string]string{"schemas/": ""},
			"job.yaml:5:16: validate.json_schema: schemas is a directory, not a schema file"},
		{"schema file not JSON", exec + "validate:\n  json_schema: s.json\n", map[string]string{"s.json": "{\"type\": \"object\",}"},
			"job.yaml:5:16: validate.json_schema: s.json is not JSON: line 1, column 19: invalid character '}' looking for beginning of object key string"},
		{"schema file breaks the JSON Schema rules", exec + "validate:\n  json_schema: s.json\n", map[string]string{"s.json": `{"type": "objekt", "required": "n", "minLength": -1}`},
			"job.yaml:5:16: validate.json_schema: s.json is not a valid JSON Schema:\n" +
				"  at '/minLength': minimum: got -1, want 0\n" +
				"  at '/required': got string, want array\n" +
				"  at '/type': got string, want array\n" +
				"  at '/type': value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'"},
		{"inline schema breaks the JSON Schema rules", exec + "validate:\n  json_schema:\n    type: 3\n", nil,
			"job.yaml:6:5: validate.json_schema: the inline schema is not a valid JSON Schema:\n" +
				"  at '/type': got number, want array\n" +
				"  at '/type': value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'"},
		{"schema file that compiles", exec + "validate:\n  json_schema: s.json\n", map[string]string{"s.json": `{"type": "object"}`}, ""},
		{"exec program missing", "task:\n  type: exec\n  argv: [./run.sh, x]\n", nil,
			"job.yaml:3:10: task.argv: program ./run.sh not found ($DIR/run.sh)"},
		{"exec program not executable", "task:\n  type: exec\n  argv: [./run.sh, x]\n", map[string]string{"run.sh": "echo"},
			"job.yaml:3:10: task.argv: ./run.sh is not executable (chmod +x $DIR/run.sh)"},
		{"exec program is a directory", "task:\n  type: exec\n  argv: [../x]\n", map[string]string{"../x/": ""},
			"job.yaml:3:10: task.argv: ../x is a directory, not a program"},
		{"exec program found", "task:\n  type: exec\n  argv: [./run.sh]\n", map[string]string{"run.sh": "#!/bin/sh\n"}, ""},
		{"templated program is only known at run time", "task:\n  type: exec\n  argv: ['./{{.tool}}']\n", nil, ""},
		{"program on PATH is looked up at run time", "task:\n  type: exec\n  argv: [no-such-tool]\n", nil, ""},
		{"validate command missing, one string", exec + "validate:\n  command: ./check.sh\n", nil,
			"job.yaml:5:12: validate.command: program ./check.sh not found ($DIR/check.sh)"},
		{"validate command missing, a list", exec + "validate:\n  command: [./check.sh, --strict]\n", nil,
			"job.yaml:5:13: validate.command: program ./check.sh not found ($DIR/check.sh)"},
		{"task.dir missing", exec + "  dir: work\n", nil,
			"job.yaml:4:8: task.dir: directory work not found ($DIR/work)"},
		{"task.dir is a file", exec + "  dir: work\n", map[string]string{"work": "x"},
			"job.yaml:4:8: task.dir: work is not a directory"},
		{"input is a directory", "input: data\n" + exec, map[string]string{"data/": ""},
			"job.yaml:1:8: input: data is a directory; tenax reads one file"},
		{"input path is a directory", "input: {path: data.jsonl, format: jsonl}\n" + exec, map[string]string{"data.jsonl/": ""},
			"job.yaml:1:15: input.path: data.jsonl is a directory; tenax reads one file"},
		{"missing input is left to the caller", "input: items.jsonl\n" + exec, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "specs")
			writeFiles(t, dir, map[string]string{"job.yaml": tt.spec})
			writeFiles(t, dir, tt.files)
			_, err := Load(filepath.Join(dir, "job.yaml"), nil)
			got := ""
			if err != nil {
				got = strings.ReplaceAll(err.Error(), dir, "$DIR")
				got = strings.TrimPrefix(got, "$DIR/")
			}
			if got != tt.want {
				t.Errorf("error:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestParseNeverReadsFiles(t *testing.T) {
	s := parse(t, "input: data.jsonl\ntask: {type: exec, argv: [./run.sh], dir: work}\nvalidate: {json_schema: missing.json, command: ./check.sh}\n", nil)
	if s.Validate.JSONSchema.Path != "/specs/missing.json" || s.Task.Argv[0] != "/specs/run.sh" {
		t.Errorf("paths not resolved: schema %q, argv %q", s.Validate.JSONSchema.Path, s.Task.Argv)
	}
}

func TestErrorAtPointsAtTheValueTheSpecWrote(t *testing.T) {
	s := parse(t, "input:\n  format: jsonl\n  path: items.jsonl\ntask: {type: exec, argv: [echo]}\n", nil)
	tests := []struct{ key, want string }{
		{"input.path", "job.yaml:3:9: input: missing"},
		{"task.argv[0]", "job.yaml:4:27: input: missing"},
		{"task", "job.yaml:4:8: input: missing"},
		{"no.such.key", "job.yaml:1:1: input: missing"},
	}
	for _, tt := range tests {
		if got := s.ErrorAt(tt.key, "input: %s", "missing").Error(); got != tt.want {
			t.Errorf("ErrorAt(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}
