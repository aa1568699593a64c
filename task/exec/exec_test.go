package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
)

// The test binary doubles as the commands the tests run: with
// TENAX_EXEC_HELPER=1 in its environment it acts out os.Args[1] instead of
// running tests, so the tests need no shell and see exactly what arrived.
func TestMain(m *testing.M) {
	if os.Getenv("TENAX_EXEC_HELPER") == "1" {
		os.Exit(helper(os.Args[1], os.Args[2:]))
	}
	os.Exit(m.Run())
}

func helper(mode string, args []string) int {
	switch mode {
	case "args": // print the arguments as a JSON array
		_ = json.NewEncoder(os.Stdout).Encode(args)
	case "stdin": // copy stdin to stdout
		_, _ = io.Copy(os.Stdout, os.Stdin)
	case "print": // print args[0] verbatim
		fmt.Print(args[0])
	case "env": // print the named variables as a JSON object, null if unset
		vars := map[string]*string{}
		for _, name := range args {
			if v, ok := os.LookupEnv(name); ok {
				vars[name] = &v
			} else {
				vars[name] = nil
			}
		}
		_ = json.NewEncoder(os.Stdout).Encode(vars)
	case "feedback": // print the feedback files' paths and contents
		out := map[string]string{}
		for _, name := range []string{EnvFeedback, EnvPreviousOutput} {
			path := os.Getenv(name)
			b, err := os.ReadFile(path)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			out[name+"_path"], out[name] = path, string(b)
		}
		_ = json.NewEncoder(os.Stdout).Encode(out)
	case "exit": // write args[1] to stderr and exit with args[0]
		code, _ := strconv.Atoi(args[0])
		fmt.Fprint(os.Stderr, args[1])
		return code
	case "run-task": // run sh -c args[1] as a task recording its groups in args[0]
		g, err := OpenGroupFile(args[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		tk, err := New(Config{Argv: []string{"sh", "-c", args[1]}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_, _ = tk.WithGroups(g).Run(context.Background(), task.Item{})
		return 0
	case "flood": // write stdout forever, counting in file args[0] what was taken
		f, err := os.Create(args[0])
		if err != nil {
			return 1
		}
		chunk := make([]byte, 64<<10)
		for n := len(chunk); ; n += len(chunk) {
			if _, err := os.Stdout.Write(chunk); err != nil {
				return 3
			}
			// Fixed width, in place: a kill between two writes leaves a count.
			if _, err := f.WriteAt(fmt.Appendf(nil, "%020d", n), 0); err != nil {
				return 1
			}
		}
	case "kill-self":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "ready-then-hang": // say so in the fifo args[0], then block
		f, err := os.OpenFile(args[0], os.O_WRONLY, 0)
		if err != nil {
			return 1
		}
		fmt.Fprintln(f, "ready")
		f.Close()
		select {}
	default:
		fmt.Fprintf(os.Stderr, "unknown helper mode %q", mode)
		return 2
	}
	return 0
}

// helperConfig returns a Config running the test binary as the helper.
func helperConfig(t *testing.T, argv ...string) Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{Argv: append([]string{exe}, argv...), Env: map[string]string{"TENAX_EXEC_HELPER": "1"}}
}

func mustNew(t *testing.T, cfg Config) *Task {
	t.Helper()
	tk, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tk
}

// outputString decodes a text output.
func outputString(t *testing.T, res task.Result) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(res.Output, &s); err != nil {
		t.Fatalf("output %s is not a JSON string: %v", res.Output, err)
	}
	return s
}

func TestRunPassesValuesAsLiteralArguments(t *testing.T) {
	dir := t.TempDir()
	fields := map[string]any{
		"subst":  "$(touch pwned)",
		"tick":   "`touch pwned`",
		"semi":   "; rm -rf x; touch pwned",
		"quotes": `"quotes'`,
		"lines":  "first\nsecond && touch pwned",
		"glob":   "*",
		"empty":  "",
		"tmpl":   "{{.idx}}",
	}
	cfg := helperConfig(t, "args", "{{.subst}}", "{{.tick}}", "{{.semi}}", "{{.quotes}}", "{{.lines}}", "{{.glob}}", "{{.empty}}", "{{.tmpl}}", "a {{.glob}} b")
	cfg.Dir = dir
	cfg.Output = OutputJSON
	res, err := mustNew(t, cfg).Run(t.Context(), task.Item{Fields: fields})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var got []string
	if err := json.Unmarshal(res.Output, &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"$(touch pwned)", "`touch pwned`", "; rm -rf x; touch pwned", `"quotes'`, "first\nsecond && touch pwned", "*", "", "{{.idx}}", "a * b"}
	if !slices.Equal(got, want) {
		t.Errorf("the command received\n%q\nwant exactly\n%q", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a value was executed: file pwned exists (stat: %v)", err)
	}
}

func TestRunTemplateFunctions(t *testing.T) {
	fields := map[string]any{"name": "  Ada  ", "n": 3.0, "tags": []any{"a", "b"}, "blank": ""}
	cfg := helperConfig(t, "args", "{{.name | trim | upper}}", "{{.name | lower}}", "{{json .tags}}", "{{.blank | default \"none\"}}", "{{index . \"missing\" | default \"absent\"}}", "{{.n}}", "{{.idx}}/{{.id}}")
	cfg.Output = OutputJSON
	res, err := mustNew(t, cfg).Run(t.Context(), task.Item{Idx: 7, ID: "x7", Fields: fields})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := `["ADA","  ada  ","[\"a\",\"b\"]","none","absent","3","7/x7"]`
	if string(res.Output) != want {
		t.Errorf("rendered %s, want %s", res.Output, want)
	}
}

func TestRunMissingFieldIsItemError(t *testing.T) {
	for _, cfg := range []Config{
		{Argv: []string{"echo", "{{.nope}}"}},
		{Argv: []string{"echo"}, Stdin: "{{.nope}}"},
		{Argv: []string{"echo"}, Env: map[string]string{"X": "{{.nope}}"}},
	} {
		_, err := mustNew(t, cfg).Run(t.Context(), task.Item{Fields: map[string]any{}})
		var ce *classify.Error
		if !errors.As(err, &ce) || ce.Class != classify.Item {
			t.Errorf("%+v: error %v is not marked item", cfg, err)
			continue
		}
		if !strings.Contains(err.Error(), "nope") {
			t.Errorf("%+v: error %q does not name the missing field", cfg, err)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // in the error
	}{
		{"empty argv", Config{}, "argv is empty"},
		{"bad argv template", Config{Argv: []string{"echo", "{{.x"}}, "argv[1]"},
		{"bad stdin template", Config{Argv: []string{"cat"}, Stdin: "{{end}}"}, "stdin"},
		{"bad env template", Config{Argv: []string{"env"}, Env: map[string]string{"TOKEN": "{{nofunc}}"}}, "env[TOKEN]"},
		{"bad env name", Config{Argv: []string{"env"}, Env: map[string]string{"A=B": "x"}}, `"A=B"`},
		{"unknown output", Config{Argv: []string{"echo"}, Output: "yaml"}, `output "yaml"`},
		{"code in two lists", Config{Argv: []string{"echo"}, ExitCodes: ExitCodes{Retryable: []int{75}, Fatal: []int{75}}}, "75 is listed as both retryable and fatal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestRunReportsExitCodeAndSignal(t *testing.T) {
	tests := []struct {
		name     string
		argv     []string
		code     int
		sig      string
		stderr   string
		errorEnd string
	}{
		{"exit 2", []string{"exit", "2", "boom\nmore detail\n"}, 2, "", "boom\nmore detail\n", ": exit 2: more detail"},
		{"python traceback", []string{"exit", "1", pyTraceback}, 1, "", pyTraceback, ": exit 1: FileNotFoundError: [Errno 2] No such file or directory: 'a.go'"},
		{"exit 75", []string{"exit", "75", "try later"}, 75, "", "try later", ": exit 75: try later"},
		{"silent exit 1", []string{"exit", "1", ""}, 1, "", "", ": exit 1"},
		{"killed", []string{"kill-self"}, -1, "killed", "", ": signal killed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mustNew(t, helperConfig(t, tt.argv...)).Run(t.Context(), task.Item{})
			var ee *ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("error %v (%T) is not an *ExitError", err, err)
			}
			var coder classify.ExitCoder = ee
			if coder.ExitCode() != tt.code || coder.Signal() != tt.sig {
				t.Errorf("ExitCode, Signal = %d, %q; want %d, %q", coder.ExitCode(), coder.Signal(), tt.code, tt.sig)
			}
			var carrier classify.StderrCarrier = ee
			if carrier.Stderr() != tt.stderr {
				t.Errorf("Stderr = %q, want %q", carrier.Stderr(), tt.stderr)
			}
			if !strings.HasSuffix(err.Error(), tt.errorEnd) {
				t.Errorf("Error() = %q, want it to end %q", err, tt.errorEnd)
			}
			var ce *classify.Error
			if errors.As(err, &ce) {
				t.Errorf("without exit_codes rules the error is marked %v; the classifier's defaults should decide", ce.Class)
			}
		})
	}
}

func TestRunExitCodesRulesMarkTheClass(t *testing.T) {
	rules := ExitCodes{Retryable: []int{3}, Fatal: []int{4, 127}, Item: []int{75}}
	tests := []struct {
		name string
		argv []string
		want classify.Class // Unknown: not marked
	}{
		{"listed retryable", []string{"exit", "3", ""}, classify.Retryable},
		{"listed fatal", []string{"exit", "4", ""}, classify.Fatal},
		{"explicit config wins over the default for 75", []string{"exit", "75", ""}, classify.Item},
		{"unlisted", []string{"exit", "5", ""}, classify.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := helperConfig(t, tt.argv...)
			cfg.ExitCodes = rules
			_, err := mustNew(t, cfg).Run(t.Context(), task.Item{})
			var ce *classify.Error
			got := classify.Unknown
			if errors.As(err, &ce) {
				got = ce.Class
				if ce.Reason != "exit_codes rule" {
					t.Errorf("reason = %q, want %q", ce.Reason, "exit_codes rule")
				}
			}
			if got != tt.want {
				t.Errorf("error %v marked %v, want %v", err, got, tt.want)
			}
			if _, ok := errors.AsType[*ExitError](err); !ok {
				t.Errorf("the mark hides the *ExitError: %v", err)
			}
		})
	}
	t.Run("command not found", func(t *testing.T) {
		_, err := mustNew(t, Config{Argv: []string{"tenax-no-such-command"}, ExitCodes: rules}).Run(t.Context(), task.Item{})
		ce, ok := errors.AsType[*classify.Error](err)
		if !ok || ce.Class != classify.Fatal {
			t.Errorf("exit_codes fatal: [127] did not mark a missing command: %v", err)
		}
	})
}

func TestRunCommandThatCannotStart(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plain.txt"), []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		argv0  string
		code   int
		target error
	}{
		{"not in PATH", "tenax-no-such-command", 127, osexec.ErrNotFound},
		{"relative path missing", "./missing.sh", 127, osexec.ErrNotFound},
		{"not executable", "./plain.txt", 126, fs.ErrPermission},
		{"a directory", "./", 126, fs.ErrPermission},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mustNew(t, Config{Argv: []string{tt.argv0}, Dir: dir}).Run(t.Context(), task.Item{})
			if !errors.Is(err, tt.target) {
				t.Errorf("error %v does not match %v", err, tt.target)
			}
			ee, ok := errors.AsType[*ExitError](err)
			if !ok || ee.ExitCode() != tt.code {
				t.Fatalf("error %v: want an *ExitError with code %d", err, tt.code)
			}
			if !strings.HasPrefix(err.Error(), tt.argv0+": exit "+strconv.Itoa(tt.code)+": ") {
				t.Errorf("Error() = %q, want it to name the command and code", err)
			}
		})
	}
}

func TestRunRelativeCommandResolvesAgainstDir(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"ran in $PWD\"\n"
	if err := os.WriteFile(filepath.Join(dir, "review.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := mustNew(t, Config{Argv: []string{"./review.sh"}, Dir: dir}).Run(t.Context(), task.Item{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := outputString(t, res), "ran in "+dir; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

// processGone reports whether pid has exited (zombies count: they no
// longer run), waiting up to a few seconds for the kernel to deliver a kill.
func processGone(pid int) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		// The state follows the parenthesised command name.
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func TestRunTimeoutKillsTheProcessGroup(t *testing.T) {
	tests := []struct {
		name   string
		script string
	}{
		{"background grandchild", "sleep 60 &\necho $! > \"$1\"\nsleep 60\n"},
		// The grandchild ignores SIGTERM and holds stdout open: WaitDelay
		// unblocks Run and the SIGKILL to the group finishes it.
		{"grandchild ignoring SIGTERM", "(trap '' TERM; exec sleep 60) &\necho $! > \"$1\"\ntrap '' TERM\nsleep 60\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			script, pidFile := filepath.Join(dir, "spawn.sh"), filepath.Join(dir, "pid")
			if err := os.WriteFile(script, []byte("#!/bin/sh\n"+tt.script), 0o755); err != nil {
				t.Fatal(err)
			}
			// Long enough for the script to record its grandchild on a
			// loaded machine before the timeout strikes.
			cfg := Config{Argv: []string{script, pidFile}, Timeout: 3 * time.Second, ExitCodes: ExitCodes{Item: []int{124}}}
			start := time.Now()
			_, err := mustNew(t, cfg).Run(t.Context(), task.Item{})
			if took := time.Since(start); took > 50*time.Second {
				t.Errorf("Run took %v after a 3s timeout: the group was not killed", took)
			}
			ee, ok := errors.AsType[*ExitError](err)
			if !ok || !ee.TimedOut || ee.ExitCode() != 124 {
				t.Fatalf("error %v: want an *ExitError with TimedOut and code 124", err)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v does not match context.DeadlineExceeded", err)
			}
			if want := "timed out after 3s"; !strings.Contains(err.Error(), want) {
				t.Errorf("Error() = %q, want it to say %q", err, want)
			}
			if ce, ok := errors.AsType[*classify.Error](err); !ok || ce.Class != classify.Item {
				t.Errorf("exit_codes item: [124] did not mark the timeout: %v", err)
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("the script did not record its grandchild: %v", err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			if !processGone(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("grandchild %d survived the timeout", pid)
			}
		})
	}
}

func TestRunCanceledContext(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "ready")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		// Opening the fifo blocks until the command opens it to write.
		if f, err := os.Open(fifo); err == nil {
			_, _ = io.ReadAll(f)
			f.Close()
		}
		cancel()
	}()
	cfg := helperConfig(t, "ready-then-hang", fifo)
	cfg.ExitCodes = ExitCodes{Fatal: []int{-1, 143}}
	_, err := mustNew(t, cfg).Run(ctx, task.Item{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v does not match context.Canceled", err)
	}
	if _, ok := errors.AsType[*classify.Error](err); ok {
		t.Errorf("a canceled attempt is marked by an exit_codes rule: %v", err)
	}
	if ee, ok := errors.AsType[*ExitError](err); !ok || ee.Signal() != "terminated" {
		t.Errorf("error %v: want an *ExitError for a process terminated by the cancel", err)
	}

	// Canceled before the start, nothing runs.
	_, err = mustNew(t, cfg).Run(ctx, task.Item{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("on a canceled ctx, error %v does not match context.Canceled", err)
	}
}

func TestRunStdinTemplate(t *testing.T) {
	cfg := helperConfig(t, "stdin")
	cfg.Stdin = "review {{.path}}\n$(not run) {{json .}}"
	res, err := mustNew(t, cfg).Run(t.Context(), task.Item{Idx: 1, Fields: map[string]any{"path": "a.go"}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := `review a.go` + "\n" + `$(not run) {"feedback":"","id":"","idx":1,"path":"a.go","previous_output":""}`
	if got := outputString(t, res); got != want {
		t.Errorf("stdin arrived as %q, want %q", got, want)
	}
}

func TestRunEnvironment(t *testing.T) {
	t.Setenv("TENAX_EXEC_TEST_INHERITED", "from parent")
	t.Setenv(EnvFeedback, "/stale/from/an/outer/run")
	cfg := helperConfig(t, "env", "TOKEN", "TENAX_EXEC_TEST_INHERITED", EnvIdx, EnvAttempt, EnvFeedback, EnvPreviousOutput)
	cfg.Env["TOKEN"] = "tok-{{.id}}"
	cfg.Output = OutputJSON
	res, err := mustNew(t, cfg).Run(t.Context(), task.Item{Idx: 12, ID: "a"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := `{"TENAX_ATTEMPT":"0","TENAX_EXEC_TEST_INHERITED":"from parent","TENAX_FEEDBACK":null,"TENAX_IDX":"12","TENAX_PREVIOUS_OUTPUT":null,"TOKEN":"tok-a"}`
	if string(res.Output) != want {
		t.Errorf("environment\n%s\nwant\n%s", res.Output, want)
	}
}

func TestRunFeedbackFilesExistDuringTheAttempt(t *testing.T) {
	cfg := helperConfig(t, "feedback")
	cfg.Output = OutputJSON
	fb := &task.Feedback{PreviousOutput: "{\"answer\": 4", Message: "unexpected end of JSON input\nclose the object", Attempt: 2}
	res, err := mustNew(t, cfg).Run(t.Context(), task.Item{Feedback: fb})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var got map[string]string
	if err := json.Unmarshal(res.Output, &got); err != nil {
		t.Fatal(err)
	}
	if got[EnvFeedback] != fb.Message || got[EnvPreviousOutput] != fb.PreviousOutput {
		t.Errorf("the command read feedback %q and previous output %q; want %q and %q", got[EnvFeedback], got[EnvPreviousOutput], fb.Message, fb.PreviousOutput)
	}
	for _, name := range []string{EnvFeedback, EnvPreviousOutput} {
		if _, err := os.Stat(got[name+"_path"]); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s file %s outlived the attempt (stat: %v)", name, got[name+"_path"], err)
		}
	}

	// TENAX_ATTEMPT is the feedback's heal attempt.
	cfg = helperConfig(t, "env", EnvAttempt)
	cfg.Env[EnvAttempt] = "tenax's own variables win over the config's"
	res, err = mustNew(t, cfg).Run(t.Context(), task.Item{Feedback: fb})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := outputString(t, res), `{"TENAX_ATTEMPT":"2"}`; got != want {
		t.Errorf("attempt env %s, want %s", got, want)
	}
}

func TestRunFeedbackTemplateFields(t *testing.T) {
	cfg := helperConfig(t, "args", "{{.feedback}}", "{{.previous_output}}")
	cfg.Output = OutputJSON
	tk := mustNew(t, cfg)
	res, err := tk.Run(t.Context(), task.Item{Feedback: &task.Feedback{PreviousOutput: "prev", Message: "fix it", Attempt: 1}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := `["fix it","prev"]`; string(res.Output) != want {
		t.Errorf("with feedback rendered %s, want %s", res.Output, want)
	}
	res, err = tk.Run(t.Context(), task.Item{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := `["",""]`; string(res.Output) != want {
		t.Errorf("without feedback rendered %s, want %s", res.Output, want)
	}
}

func TestRunOutput(t *testing.T) {
	tests := []struct {
		name    string
		output  string
		stdout  string
		want    string // the Result's output; "" when an OutputError is expected
		invalid bool
	}{
		{"text trims one trailing newline", OutputText, "hello\n\n", `"hello\n"`, false},
		{"text trims CRLF", "", "hello\r\n", `"hello"`, false},
		{"text keeps HTML characters", OutputText, "<a & b>", `"<a & b>"`, false},
		{"text empty", OutputText, "", `""`, false},
		{"json object compacted", OutputJSON, "{\n  \"a\": [1, 2]\n}\n", `{"a":[1,2]}`, false},
		{"json scalar", OutputJSON, " 42 ", `42`, false},
		{"json invalid", OutputJSON, "{\"a\": 1", "", true},
		{"json two values", OutputJSON, "1 2", "", true},
		{"json empty", OutputJSON, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := helperConfig(t, "print", tt.stdout)
			cfg.Output = tt.output
			res, err := mustNew(t, cfg).Run(t.Context(), task.Item{})
			if tt.invalid {
				oe, ok := errors.AsType[*task.OutputError](err)
				if !ok {
					t.Fatalf("error %v (output %s): want a *task.OutputError", err, res.Output)
				}
				if oe.Output != tt.stdout {
					t.Errorf("OutputError.Output = %q, want the stdout %q", oe.Output, tt.stdout)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if string(res.Output) != tt.want {
				t.Errorf("output %s, want %s", res.Output, tt.want)
			}
		})
	}
}

func TestRunCapsStderr(t *testing.T) {
	cfg := helperConfig(t, "exit", "1", "first line\n"+strings.Repeat("x", 1000)+"\nlast line")
	cfg.MaxStderr = 100
	_, err := mustNew(t, cfg).Run(t.Context(), task.Item{})
	ee, ok := errors.AsType[*ExitError](err)
	if !ok {
		t.Fatalf("error %v is not an *ExitError", err)
	}
	s := ee.Stderr()
	if !strings.HasPrefix(s, "first line\n") || !strings.HasSuffix(s, "x\nlast line") || !strings.Contains(s, "…[921 bytes elided]…") {
		t.Errorf("capped stderr = %q; want the head, an elision of 921 bytes, and the tail", s)
	}
}

func TestCapBuffer(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"fits", 10, []string{"abc", "def"}, "abcdef"},
		{"exactly full", 6, []string{"abc", "def"}, "abcdef"},
		{"one over", 6, []string{"abcdefg"}, "abc…[1 bytes elided]…efg"},
		{"tail wraps over many writes", 4, []string{"ab", "c", "d", "e", "f", "gh"}, "ab…[4 bytes elided]…gh"},
		{"one huge write", 4, []string{strings.Repeat("-", 100) + "end"}, "--…[99 bytes elided]…nd"},
		{"no rune cut at the head", 6, []string{"aaé" + strings.Repeat(".", 10)}, "aa…[9 bytes elided]…..."},
		{"no rune cut at the tail", 6, []string{strings.Repeat(".", 10) + "éab"}, "...…[9 bytes elided]…ab"},
		{"whole runes kept", 6, []string{"aé" + strings.Repeat(".", 10) + "éa"}, "aé…[10 bytes elided]…éa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newCapBuffer(tt.max)
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := b.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRunIsSafeForConcurrentUse(t *testing.T) {
	cfg := helperConfig(t, "args", "{{.n}}")
	tk := mustNew(t, cfg)
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			res, err := tk.Run(t.Context(), task.Item{Fields: map[string]any{"n": i}})
			if err == nil && !strings.Contains(string(res.Output), `\"`+strconv.Itoa(i)+`\"`) {
				err = fmt.Errorf("item %d got output %s", i, res.Output)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestClassifierReadsTheCarriedSignals(t *testing.T) {
	dir := t.TempDir()
	sleeper := filepath.Join(dir, "sleep.sh")
	if err := os.WriteFile(sleeper, []byte("#!/bin/sh\nsleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		cfg  Config
		want classify.Class
	}{
		{"exit 2 is the item's fault", t.Context(), helperConfig(t, "exit", "2", "bad input"), classify.Item},
		{"exit 1 saying connection reset is transient", t.Context(), helperConfig(t, "exit", "1", "Traceback (most recent call last):\n  File \"r.py\", line 3, in <module>\nConnectionResetError: [Errno 104] Connection reset by peer\n"), classify.Retryable},
		{"exit 1 whose last lines time out is transient", t.Context(), helperConfig(t, "exit", "1", "curl: (28) Operation timed out after 30001 milliseconds\nreview failed\n"), classify.Retryable},
		{"exit 1 with a missing file is the item's", t.Context(), helperConfig(t, "exit", "1", pyTraceback), classify.Item},
		{"exit 1 with openai's connection error is transient", t.Context(), helperConfig(t, "exit", "1", "Traceback (most recent call last):\n  File \"r.py\", line 3, in <module>\nopenai.APIConnectionError: Connection error.\n"), classify.Retryable},
		{"exit 1 with openai's 401 is fatal", t.Context(), helperConfig(t, "exit", "1", "openai.AuthenticationError: Error code: 401 - {'error': {'code': 'invalid_api_key'}}\n"), classify.Fatal},
		{"exit 1 with an assertion saying unreachable is the item's", t.Context(), helperConfig(t, "exit", "1", "Traceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n    assert up, \"host unreachable\"\nAssertionError: host unreachable\n"), classify.Item},
		{"exit 1 saying no route to host is transient", t.Context(), helperConfig(t, "exit", "1", "ssh: connect to host build-7 port 22: No route to host\n"), classify.Retryable},
		{"exit 75 is transient", t.Context(), helperConfig(t, "exit", "75", ""), classify.Retryable},
		{"killed by a signal", t.Context(), helperConfig(t, "kill-self"), classify.Retryable},
		{"not found", t.Context(), Config{Argv: []string{"tenax-no-such-command"}}, classify.Fatal},
		{"not executable", t.Context(), Config{Argv: []string{"./"}, Dir: dir}, classify.Fatal},
		{"timeout", t.Context(), Config{Argv: []string{sleeper}, Timeout: 100 * time.Millisecond}, classify.Retryable},
		{"canceled", canceled, helperConfig(t, "exit", "0", ""), classify.Canceled},
		{"template", t.Context(), Config{Argv: []string{"echo", "{{.missing}}"}}, classify.Item},
		// An item's huge value (one argument over Linux's 128 KiB) was
		// fatal, exit 126, as if the command could not be executed.
		{"argument list too long", t.Context(), Config{Argv: []string{"true", strings.Repeat("a", 200<<10)}}, classify.Item},
		{"environment too long", t.Context(), Config{Argv: []string{"true"}, Env: map[string]string{"BIG": strings.Repeat("a", 200<<10)}}, classify.Item},
		{"exit_codes rule", t.Context(), func() Config {
			c := helperConfig(t, "exit", "2", "")
			c.ExitCodes.Retryable = []int{2}
			return c
		}(), classify.Retryable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mustNew(t, tt.cfg).Run(tt.ctx, task.Item{Fields: map[string]any{}})
			if err == nil {
				t.Fatal("Run succeeded")
			}
			if d := classify.Classify(err); d.Class != tt.want {
				t.Errorf("%v classified %v, want %v", err, d, tt.want)
			}
		})
	}
}

const pyTraceback = `Traceback (most recent call last):
  File "review.py", line 12, in <module>
    main(sys.argv[1])
  File "review.py", line 8, in main
    with open(path) as f:
         ^^^^^^^^^^
FileNotFoundError: [Errno 2] No such file or directory: 'a.go'
`

func TestRunRefusesItemValuesThatWouldBeOptions(t *testing.T) {
	dir := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	fields := map[string]any{"f": "-o" + pwned, "nul": "a\x00b"}
	tests := []struct {
		name    string
		argv    []string
		allow   bool
		wantErr string // "" for success
	}{
		{"value starting with -", []string{"args", "{{.f}}"}, false, `argv[2] is "-o`},
		{"after --", []string{"args", "--", "{{.f}}"}, false, ""},
		{"template starts with -", []string{"args", "--out={{.f}}"}, false, ""},
		{"allowed by the spec", []string{"args", "{{.f}}"}, true, ""},
		{"NUL byte", []string{"args", "x{{.nul}}"}, true, "argv[2] holds a NUL byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := helperConfig(t, tt.argv...)
			cfg.AllowOptionValues = tt.allow
			_, err := mustNew(t, cfg).Run(t.Context(), task.Item{Fields: fields})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Run = %v, want an error containing %q", err, tt.wantErr)
			}
			if d := classify.Classify(err); d.Class != classify.Item {
				t.Errorf("classified %v, want item: only this item's value is bad", d)
			}
			var ee *ExitError
			if errors.As(err, &ee) {
				t.Errorf("the command ran (%v); it must be refused before starting", ee)
			}
		})
	}
	t.Run("NUL in env", func(t *testing.T) {
		cfg := helperConfig(t, "args")
		cfg.Env["X"] = "{{.nul}}"
		_, err := mustNew(t, cfg).Run(t.Context(), task.Item{Fields: fields})
		if err == nil || !strings.Contains(err.Error(), "env[X] holds a NUL byte") || classify.Classify(err).Class != classify.Item {
			t.Errorf("Run = %v, want an item error naming env[X]", err)
		}
	})
}
