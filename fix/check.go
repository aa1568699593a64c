package fix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/internal/lazyregexp"
	texec "github.com/tenaxhq/tenax/task/exec"
)

// The parsers a Check may name: which extractor reads its output.
const (
	ParserAuto    = "auto"
	ParserGoTest  = "gotest"
	ParserPytest  = "pytest"
	ParserJest    = "jest"
	ParserVitest  = "vitest"
	ParserTSC     = "tsc"
	ParserESLint  = "eslint"
	ParserGeneric = "generic"
)

// maxCheckOutput caps the output kept of one check run; the head and the
// tail are kept, since summaries come last.
const maxCheckOutput = 4 << 20

// Check is the command whose errors a fix run fixes.
type Check struct {
	// Argv is the command, run without a shell.
	Argv []string
	// Dir is where it runs.
	Dir string
	// Env adds variables to its environment.
	Env map[string]string
	// Timeout bounds one run; 0 is none.
	Timeout time.Duration
	// Parser is one of the Parser constants; "" is ParserAuto.
	Parser string
	// Redact, when set, replaces the spec's secrets in the output before
	// anything reads it: the errors, the fixer's request, the audit
	// trail, state.json and checks/*.log see only what it returns.
	Redact func(string) string

	// groups records the check's process group for the run (runGroup).
	groups *texec.GroupFile
}

// CheckResult is one run of the check.
type CheckResult struct {
	// ExitCode is the command's exit status; -1 when it was killed.
	ExitCode int `json:"exit_code"`
	// Errors are the errors extracted from Output; none when the check
	// passed (exit status 0).
	Errors []heal.Observed `json:"errors"`
	// Output is the command's stdout and stderr, interleaved.
	Output string `json:"-"`
	// Duration is how long it ran.
	Duration time.Duration `json:"duration_ns"`
	// TimedOut reports that Timeout killed it.
	TimedOut bool `json:"timed_out,omitempty"`
	// Tally is what the runner says it ran.
	Tally Tally `json:"tally"`
}

// Passed reports whether the check passed: exit status 0.
func (r CheckResult) Passed() bool { return r.ExitCode == 0 && !r.TimedOut }

// Run runs the check once. The exit status decides: 0 is a pass, whatever
// the output says; otherwise the parser's errors, or, when it finds none,
// one error named "check" that quotes the output's most telling line (see
// tellingLine), so a failed check never looks like a passing one. The error is non-nil only when the
// command could not be started, or ctx ended.
func (c Check) Run(ctx context.Context) (CheckResult, error) {
	if len(c.Argv) == 0 {
		return CheckResult{}, errors.New("fix: the check has no command")
	}
	runCtx := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(runCtx, c.Argv[0], c.Argv[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = os.Environ()
	for k, v := range c.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out cappedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := runGroup(cmd, c.groups)
	res := CheckResult{Output: out.String(), Duration: time.Since(start)}
	if c.Redact != nil {
		// A ${DB_PASSWORD} of check.env that the check prints.
		res.Output = c.Redact(res.Output)
	}
	res.Tally = TallyOf(res.Output)
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return res, ctx.Err()
	case runCtx.Err() != nil:
		res.ExitCode, res.TimedOut = -1, true
		res.Errors = []heal.Observed{{Name: "check", Message: fmt.Sprintf("the check timed out after %s", c.Timeout)}}
		return res, nil
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	case err != nil:
		// The command cannot start: no run of it will go better.
		return res, &SetupError{Err: fmt.Errorf("fix: run the check %s: %w", strings.Join(c.Argv, " "), err)}
	}
	if res.ExitCode == 0 {
		return res, nil
	}
	res.Errors = Extract(c.Parser, res.Output)
	if len(res.Errors) == 0 {
		res.Errors = []heal.Observed{{Name: "check", Message: fmt.Sprintf("the check failed (exit status %d): %s", res.ExitCode, tellingLine(res.Output))}}
	}
	return res, nil
}

// Extract reads a check's output with the named parser (see the Parser
// constants; "" and "auto" detect the tool).
func Extract(parser, output string) []heal.Observed {
	switch parser {
	case ParserGoTest:
		return heal.ExtractGoTest(output)
	case ParserPytest:
		return heal.ExtractPytest(output)
	case ParserJest, ParserVitest:
		return heal.ExtractJest(output)
	case ParserTSC:
		return heal.ExtractTSC(output)
	case ParserESLint:
		return heal.ExtractESLint(output)
	case ParserGeneric:
		return heal.ExtractGeneric(output)
	}
	return heal.Extract(output)
}

// Ranks of an output's lines in tellingLine, best last.
const (
	// rankNoise: go test's closing FAIL, a test binary's "exit status N",
	// PASS and ok lines say only that something failed.
	rankNoise = iota
	// rankFailedPackage: "FAIL\tpkg\t0.01s" at least names the package.
	rankFailedPackage
	// rankOther: a line that is none of the others (the latest is kept,
	// as tools end with their summary).
	rankOther
	// rankSetupFailed: "FAIL\tpkg [setup failed]" or "[build failed]".
	rankSetupFailed
	// rankErrorLike: a line that reads like an error (the first is kept:
	// what follows it is often its consequence).
	rankErrorLike
	// rankAfterGoHeader: the first line after go's "# pkg" header, where
	// go puts why a package did not build or set up.
	rankAfterGoHeader
)

var (
	goFailedPackage = lazyregexp.New(`^FAIL\s+\S.*\s+\(?[0-9.]+m?s\)?$|^FAIL\s+\S+$`)
	goSetupFailed   = lazyregexp.New(`^FAIL\s+.*\[(setup|build) failed\]$`)
	noiseLine       = lazyregexp.New(`^(FAIL|PASS|ok\s.*|exit status \d+)$`)
	errorLike       = lazyregexp.New(`(?i)\b(\w*error|\w*exception|panic|fatal|failed|cannot|can't|could not|unable to|no such|not found|undefined|invalid|malformed|denied|refused|unexpected)\b`)
)

// tellingLine picks the line of a failed check's output that says most
// about why it failed, for a check whose errors no parser could read. The
// last line will not do: go test's is always "FAIL". A line after go's
// "# pkg" header wins, then the first line that reads like an error, then
// go's "[setup failed]" line, then the last other line; go's FAIL and
// "exit status" lines only when there is nothing else. Whitespace is
// folded and the line cut to 300 bytes.
func tellingLine(output string) string {
	best, bestRank := "", -1
	afterHeader := false
	for _, raw := range strings.Split(output, "\n") {
		line := strings.Join(strings.Fields(raw), " ")
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "# ") {
			afterHeader = true
			continue
		}
		rank := rankOther
		switch {
		case afterHeader:
			rank = rankAfterGoHeader
		case goSetupFailed().MatchString(line):
			rank = rankSetupFailed
		case noiseLine().MatchString(line):
			rank = rankNoise
		case goFailedPackage().MatchString(line):
			rank = rankFailedPackage
		case errorLike().MatchString(line):
			rank = rankErrorLike
		}
		afterHeader = false
		// The first line of the best ranks, the latest of the others.
		if rank > bestRank || (rank == bestRank && rank <= rankOther) {
			best, bestRank = line, rank
		}
	}
	if best == "" {
		return "no output"
	}
	return cut(best, 300)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// cappedBuffer keeps the first and last halves of maxCheckOutput bytes.
type cappedBuffer struct {
	head    bytes.Buffer
	tail    []byte
	dropped int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := maxCheckOutput/2 - b.head.Len(); room > 0 {
		k := min(room, len(p))
		b.head.Write(p[:k])
		p = p[k:]
	}
	if len(p) > 0 {
		b.tail = append(b.tail, p...)
		if over := len(b.tail) - maxCheckOutput/2; over > 0 {
			b.dropped += over
			b.tail = append(b.tail[:0], b.tail[over:]...)
		}
	}
	return n, nil
}

func (b *cappedBuffer) String() string {
	if b.dropped == 0 {
		return b.head.String() + string(b.tail)
	}
	return fmt.Sprintf("%s\n[… %d bytes left out …]\n%s", b.head.String(), b.dropped, b.tail)
}
