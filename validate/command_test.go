package validate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
)

func mustCommand(t *testing.T, argv []string, timeout time.Duration) *CommandValidator {
	t.Helper()
	c, err := Command(argv, timeout, "")
	if err != nil {
		t.Fatalf("Command(%q): %v", argv, err)
	}
	return c
}

func TestCommandJudgesByExitStatus(t *testing.T) {
	tests := []struct {
		name       string
		argv       []string
		output     json.RawMessage
		wantMsg    string // "" means valid
		wantStderr string
	}{
		{name: "checker accepts", argv: []string{"testdata/check.sh"}, output: textOutput("good\nfine")},
		{
			name:       "checker rejects with its stderr",
			argv:       []string{"testdata/check.sh"},
			output:     textOutput("good\nbad"),
			wantMsg:    `command testdata/check.sh exited with status 3: check.sh: line 2: found "bad"`,
			wantStderr: `check.sh: line 2: found "bad"`,
		},
		{
			name:       "JSON value arrives as JSON text",
			argv:       []string{"sh", "-c", `read -r line; [ "$line" = '{"es": "bad"}' ] && echo "got $line" >&2; exit 1`},
			output:     json.RawMessage(`{"es": "bad"}`),
			wantMsg:    `command sh exited with status 1: got {"es": "bad"}`,
			wantStderr: `got {"es": "bad"}`,
		},
		{name: "generated script runs and passes", argv: []string{"sh", "-s"}, output: textOutput("x=1\ntest $x -eq 1\n")},
		{
			name:       "generated script runs and fails",
			argv:       []string{"sh", "-s"},
			output:     textOutput("echo 'step one' >&2\necho 'assertion failed: x != 2' >&2\nexit 3\n"),
			wantMsg:    "command sh exited with status 3: assertion failed: x != 2",
			wantStderr: "step one\nassertion failed: x != 2",
		},
		{
			name:       "stdout stands in for an empty stderr",
			argv:       []string{"sh", "-s"},
			output:     textOutput("echo 'FAILED test_parse'\nexit 1\n"),
			wantMsg:    "command sh exited with status 1: FAILED test_parse",
			wantStderr: "FAILED test_parse",
		},
		{
			name:    "killed by a signal",
			argv:    []string{"sh", "-c", "kill -TERM $$"},
			output:  textOutput(""),
			wantMsg: "command sh was killed by signal terminated",
		},
		{name: "command that ignores stdin", argv: []string{"true"}, output: textOutput(strings.Repeat("x", 1<<20))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mustCommand(t, tt.argv, 10*time.Second).Validate(context.Background(), tt.output)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want valid", err)
				}
				return
			}
			verr := asValidationError(t, err)
			if verr.Validator != KindCommand {
				t.Errorf("Validator = %q, want %q", verr.Validator, KindCommand)
			}
			if verr.Message != tt.wantMsg {
				t.Errorf("Message = %q, want %q", verr.Message, tt.wantMsg)
			}
			if verr.Stderr() != tt.wantStderr {
				t.Errorf("Stderr() = %q, want %q", verr.Stderr(), tt.wantStderr)
			}
			var carrier classify.StderrCarrier
			if !errors.As(err, &carrier) {
				t.Error("the error does not carry its stderr for classify rules")
			}
		})
	}
}

func TestCommandRunsInDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "expected.txt"), []byte("42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Command([]string{"sh", "-c", `read -r got; [ "$got" = "$(cat expected.txt)" ] || { echo "want $(cat expected.txt), got $got" >&2; exit 1; }`}, 10*time.Second, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(context.Background(), textOutput("42")); err != nil {
		t.Errorf("Validate(42) = %v, want valid", err)
	}
	verr := asValidationError(t, c.Validate(context.Background(), textOutput("41")))
	if verr.Stderr() != "want 42, got 41" {
		t.Errorf("Stderr() = %q, want %q", verr.Stderr(), "want 42, got 41")
	}
}

func TestCommandTimeoutKillsTheProcessGroup(t *testing.T) {
	// The shell starts a sleeping child that holds stdout: killing only
	// the shell would leave Validate waiting for the pipe.
	c := mustCommand(t, []string{"sh", "-c", "echo started >&2; sleep 30; echo never"}, 200*time.Millisecond)
	start := time.Now()
	err := c.Validate(context.Background(), textOutput(""))
	elapsed := time.Since(start)
	verr := asValidationError(t, err)
	want := "command sh timed out after 200ms: started"
	if verr.Message != want {
		t.Errorf("Message = %q, want %q", verr.Message, want)
	}
	if elapsed > waitDelay {
		t.Errorf("Validate returned after %v: the sleeping child was not killed with the shell", elapsed)
	}
}

func TestCommandThatCannotStartIsFatal(t *testing.T) {
	tests := []struct {
		name string
		argv []string
	}{
		{"not on PATH", []string{"tenax-no-such-validator-command"}},
		{"missing path", []string{"testdata/no-such-script.sh"}},
		{"not executable", []string{"testdata/schemas/item.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mustCommand(t, tt.argv, time.Second).Validate(context.Background(), textOutput("x"))
			if err == nil {
				t.Fatal("Validate succeeded with a command that cannot start")
			}
			var verr *Error
			if errors.As(err, &verr) {
				t.Fatalf("got an invalid-output error %q: a missing command is not the output's fault", err)
			}
			var marked *classify.Error
			if !errors.As(err, &marked) || marked.Class != classify.Fatal {
				t.Fatalf("error %v is not marked fatal", err)
			}
			if d := classify.Classify(err); d.Class != classify.Fatal {
				t.Errorf("Classify = %v, want fatal", d)
			}
			if !strings.Contains(err.Error(), tt.argv[0]) {
				t.Errorf("error %q does not name the command", err)
			}
		})
	}
}

func TestCommandCanceledContextIsNotInvalid(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := mustCommand(t, []string{"sh", "-c", "sleep 30"}, time.Minute).Validate(ctx, textOutput(""))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Validate = %v, want context.Canceled", err)
	}
	var verr *Error
	if errors.As(err, &verr) {
		t.Errorf("a canceled check was reported as invalid output: %v", err)
	}
	if d := classify.Classify(err); d.Class != classify.Canceled {
		t.Errorf("Classify = %v, want canceled: the item must stay pending", d)
	}
}

func TestCommandRefusesBadArguments(t *testing.T) {
	tests := []struct {
		name    string
		argv    []string
		timeout time.Duration
	}{
		{"no argv", nil, time.Second},
		{"empty program", []string{""}, time.Second},
		{"negative timeout", []string{"true"}, -time.Second},
	}
	for _, tt := range tests {
		if _, err := Command(tt.argv, tt.timeout, ""); err == nil {
			t.Errorf("%s: Command(%q, %v) succeeded, want an error", tt.name, tt.argv, tt.timeout)
		}
	}
}

func TestFirstLinesCapsStderr(t *testing.T) {
	var lines []string
	for range maxStderrLines + 10 {
		lines = append(lines, "line")
	}
	got := firstLines(strings.Join(lines, "\n") + "\n\n")
	if n := strings.Count(got, "\n"); n != maxStderrLines {
		t.Errorf("kept %d line breaks, want %d (the lines and the cut mark)", n, maxStderrLines)
	}
	if !strings.HasSuffix(got, "\n…") {
		t.Errorf("cut stderr does not end with the cut mark: %q", got[len(got)-10:])
	}
	long := firstLines(strings.Repeat("é", maxStderrBytes))
	if !strings.HasSuffix(long, "é\n…") || len(long) > maxStderrBytes+len("\n…") {
		t.Errorf("byte cap broke a rune or kept too much: %d bytes, ends %q", len(long), long[len(long)-8:])
	}
}

// TestAValidatorWritingStdoutForeverIsStoppedAsAFailedCheck: a validator's
// stdout was read to its end, however long: one without a timeout that
// wrote forever (a generated script looping on print) held its item
// forever, where an exec task's stdout is bounded. Past MaxStdoutBytes the
// command is stopped and the output fails the check, saying why; a
// validator writing less than the bound passes by its exit status.
func TestAValidatorWritingStdoutForeverIsStoppedAsAFailedCheck(t *testing.T) {
	cases := []struct {
		name    string
		script  string
		invalid bool
	}{
		{"forever, exit status never reached", "yes validator-output", true},
		{"over the bound, then exit 0", "head -c 17000000 /dev/zero; exit 0", true},
		{"under the bound, exit 0", "head -c 1000000 /dev/zero; exit 0", false},
	}
	for _, tc := range cases {
		c := mustCommand(t, []string{"sh", "-c", tc.script}, 0)
		err := c.Validate(t.Context(), json.RawMessage(`"x"`))
		if !tc.invalid {
			if err != nil {
				t.Errorf("%s: %v, want it valid", tc.name, err)
			}
			continue
		}
		var verr *Error
		if !errors.As(err, &verr) || !strings.Contains(verr.Message, "wrote more than 16 MiB to stdout") {
			t.Errorf("%s: error %v, want an invalid output naming the stdout bound", tc.name, err)
		}
	}
}
