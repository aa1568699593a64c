package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tenaxhq/tenax/validate"
)

// checkFiles checks, for Load, the files the spec names, each problem at
// the value that names the file: the JSON Schema file exists and, like an
// inline schema, compiles; a program given by a relative path (./check.sh)
// exists and can be run; the exec task's working directory exists. The
// input file is left to the caller, since a command line may replace it.
func (d *decoder) checkFiles(s *Spec) {
	d.checkSchema(s)
	if s.Task.Type == "exec" {
		d.checkProgram(s, "task.argv", s.Task.Argv)
		if dir := s.Task.Dir; dir != "" {
			fi, err := os.Stat(s.abs(dir))
			switch {
			case errors.Is(err, fs.ErrNotExist):
				d.problem("task.dir", nil, "directory %s not found (%s)", dir, s.abs(dir))
			case err != nil:
				d.problem("task.dir", nil, "%v", err)
			case !fi.IsDir():
				d.problem("task.dir", nil, "%s is not a directory", dir)
			}
		}
	}
	d.checkProgram(s, "validate.command", s.Validate.Command)
}

// checkProgram checks argv[0] when it is a path relative to the spec's
// directory; a bare name is looked up on PATH when the command runs, and a
// templated one is only known then.
func (d *decoder) checkProgram(s *Spec, key string, argv []string) {
	if len(argv) == 0 || !isRelativeProgram(argv[0]) || strings.Contains(argv[0], "{{") {
		return
	}
	prog, path := argv[0], s.abs(argv[0])
	at := d.at(key+"[0]", key)
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.errorf(at, "", "%s: program %s not found (%s)", key, prog, path)
	case err != nil:
		d.errorf(at, "", "%s: %v", key, err)
	case fi.IsDir():
		d.errorf(at, "", "%s: %s is a directory, not a program", key, prog)
	case runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0:
		d.errorf(at, "", "%s: %s is not executable (chmod +x %s)", key, prog, path)
	}
}

// checkSchema compiles validate.json_schema as the run will, so that a
// missing or invalid schema fails here, at its place in the spec, rather
// than when the job starts.
func (d *decoder) checkSchema(s *Spec) {
	const key = "validate.json_schema"
	sch := s.Validate.JSONSchema
	var (
		data []byte
		name string // what the messages call the schema
		url  string // where the compiler locates it
	)
	switch {
	case sch.Path != "":
		name, url = sch.Path, s.abs(sch.Path)
		fi, err := os.Stat(url)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			d.problem(key, nil, "schema file %s not found (%s)", name, url)
			return
		case err == nil && fi.IsDir():
			d.problem(key, nil, "%s is a directory, not a schema file", name)
			return
		}
		if data, err = os.ReadFile(url); err != nil {
			d.problem(key, nil, "%v", err)
			return
		}
	case len(sch.Inline) > 0:
		// The name build uses too, so relative $refs resolve alike.
		name, url, data = "the inline schema", filepath.Join(s.dir, "inline-schema.json"), sch.Inline
	default:
		return
	}
	var syntax *json.SyntaxError
	if err := json.Unmarshal(data, new(any)); errors.As(err, &syntax) {
		// Offset counts the offending byte itself.
		line, col := offsetPos(data, syntax.Offset-1)
		d.problem(key, nil, "%s is not JSON: line %d, column %d: %v", name, line, col, syntax)
		return
	} else if err != nil {
		d.problem(key, nil, "%s is not JSON: %v", name, err)
		return
	}
	if _, err := validate.JSONSchema(data, url); err != nil {
		d.problem(key, nil, "%s", schemaMessage(name, err))
	}
}

// schemaMessage explains why a schema does not compile: for one that
// breaks the JSON Schema rules, the violations, one a line, sorted.
func schemaMessage(name string, err error) string {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if !errors.As(err, &sve) || !errors.As(sve.Err, &ve) {
		// validate's wrapping adds its own prefix; the cause says it all.
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		return fmt.Sprintf("%s is not a usable JSON Schema: %v", name, err)
	}
	lines := validate.Violations(ve)
	return fmt.Sprintf("%s is not a valid JSON Schema:\n  %s", name, strings.Join(lines, "\n  "))
}

// offsetPos turns a byte offset of data into a 1-based line and column.
func offsetPos(data []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line = 1 + strings.Count(string(before), "\n")
	col = len(before) - strings.LastIndexByte(string(before), '\n')
	return line, col
}
