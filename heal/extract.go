package heal

import (
	"strings"

	"github.com/tenaxhq/tenax/internal/lazyregexp"
)

// The extractors turn a check's output into the errors a fix loop tracks.
// Each returns the errors in the order the tool printed them, without
// exact duplicates. Name is the test (go test, pytest, jest, vitest) or the
// file (compilers, linters); Message is the first relevant line or lines,
// as the tool printed them, locations included: Normalize keeps a moved
// error's fingerprint, and a fixer needs to know where to look.

const maxMessageLines = 3

var (
	detectGoTest = lazyregexp.New(`(?m)^\s*--- FAIL: |^FAIL\t|^panic: |^ok  \t`)
	detectPytest = lazyregexp.New(`(?m)^=+ (?:FAILURES|ERRORS|short test summary info|test session starts) =+$|^(?:FAILED|ERROR) \S+::`)
	detectJest   = lazyregexp.New(`(?m)^\s*● |^ FAIL  \S`)
	detectTSC    = lazyregexp.New(`\berror TS\d+:`)
	detectESLint = lazyregexp.New(`(?m)^\s+\d+:\d+\s+(?:error|warning)\s{2,}`)
)

// Extract detects which tool wrote output (go test, pytest, jest or
// vitest, tsc, eslint's stylish format) and extracts its errors; output it
// does not recognise, and recognised output that yields nothing, go to
// ExtractGeneric. ANSI colors are ignored.
func Extract(output string) []Observed {
	output = stripANSI(output)
	var found []Observed
	switch {
	case detectGoTest().MatchString(output):
		found = ExtractGoTest(output)
	case detectPytest().MatchString(output):
		found = ExtractPytest(output)
	case detectJest().MatchString(output):
		found = ExtractJest(output)
	case detectTSC().MatchString(output):
		found = ExtractTSC(output)
	case detectESLint().MatchString(output):
		found = ExtractESLint(output)
	}
	if len(found) > 0 {
		return found
	}
	return ExtractGeneric(output)
}

func stripANSI(s string) string {
	if strings.IndexByte(s, 0x1b) < 0 {
		return s
	}
	return ansiEscape().ReplaceAllString(s, "")
}

func splitLines(s string) []string {
	return strings.Split(strings.ReplaceAll(stripANSI(s), "\r\n", "\n"), "\n")
}

// collector gathers observations in order, skipping exact duplicates.
type collector struct {
	out  []Observed
	seen map[Observed]bool
}

func (c *collector) add(name, msg string) {
	name, msg = strings.TrimSpace(name), strings.TrimSpace(msg)
	if name == "" || msg == "" {
		return
	}
	o := Observed{Name: name, Message: msg}
	if c.seen == nil {
		c.seen = make(map[Observed]bool)
	}
	if !c.seen[o] {
		c.seen[o] = true
		c.out = append(c.out, o)
	}
}

var (
	goFailLine    = lazyregexp.New(`^(\s*)--- FAIL: (\S+)(?: \(|$)`)
	goResultLine  = lazyregexp.New(`^\s*--- (?:PASS|SKIP|FAIL): `)
	goRunLine     = lazyregexp.New(`^=== (?:RUN|CONT|NAME|PAUSE)\s+(\S+)`)
	goPackageLine = lazyregexp.New(`^(?:FAIL|ok  |PASS|exit status \d+|# )`)
	// goPanicSuffix is what the testing package adds to a test's panic:
	// " [recovered]", and since Go 1.25 " [recovered, repanicked]".
	goPanicSuffix = lazyregexp.New(` \[recovered(?:, repanicked)?\]$`)
)

// ExtractGoTest extracts go test's failures: each `--- FAIL: TestX` with
// the lines the test logged (below it, or above it under -v), a panic as
// the message of the test it killed (a timeout's "running tests" name
// it), and compile errors of a failed build, named by file. A parent
// test that failed only through its subtests is not reported itself.
func ExtractGoTest(output string) []Observed {
	s := goTestScan{lines: splitLines(output), logged: map[string][]string{}}
	for i := 0; i < len(s.lines); i++ {
		line := s.lines[i]
		if m := goRunLine().FindStringSubmatch(line); m != nil {
			s.running = m[1]
			continue
		}
		if m := goFailLine().FindStringSubmatch(line); m != nil {
			i = s.fail(i, m[2], len(m[1])+4)
			continue
		}
		if strings.HasPrefix(line, "panic: ") {
			i = s.panicked(i)
			continue
		}
		if s.running != "" && strings.HasPrefix(line, "    ") && len(s.logged[s.running]) < maxMessageLines {
			s.logged[s.running] = append(s.logged[s.running], strings.TrimSpace(line))
			continue
		}
		if name, ok := genericLocation(line); ok {
			s.other.add(name, line)
		}
	}
	var tests collector
	for _, f := range s.fails {
		if len(f.msg) == 0 {
			if s.hasSubtestFailure(f.name) {
				continue
			}
			f.msg = []string{"--- FAIL: " + f.name}
		}
		tests.add(f.name, strings.Join(f.msg, "\n"))
	}
	return append(tests.out, s.other.out...)
}

// goTestScan is one pass over go test's output: the failures found so
// far, what each running test logged (-v), and the other located lines.
type goTestScan struct {
	lines   []string
	fails   []goTestFailure
	logged  map[string][]string // -v: lines logged under === RUN name
	running string
	other   collector
}

// goTestFailure is one failed test and its message lines.
type goTestFailure struct {
	name string
	msg  []string
}

// fail reads the `--- FAIL: name` at line i with the lines indented below
// it (or, with none, what the test logged above it under -v), and returns
// the last line it consumed.
func (s *goTestScan) fail(i int, name string, indent int) int {
	f := goTestFailure{name: name}
	for i+1 < len(s.lines) {
		next := s.lines[i+1]
		if strings.TrimSpace(next) == "" || goResultLine().MatchString(next) || len(next)-len(strings.TrimLeft(next, " \t")) < indent {
			break
		}
		if len(f.msg) < maxMessageLines {
			f.msg = append(f.msg, strings.TrimSpace(next))
		}
		i++
	}
	if len(f.msg) == 0 {
		f.msg = s.logged[f.name]
	}
	s.fails = append(s.fails, f)
	s.running = ""
	return i
}

// panicked reads the `panic:` at line i as the message of the test it
// killed, skips the goroutine dump, and returns the last line it
// consumed.
func (s *goTestScan) panicked(i int) int {
	lines := s.lines
	msg := goPanicSuffix().ReplaceAllString(strings.TrimPrefix(lines[i], "panic: "), "")
	name := ""
	if len(s.fails) > 0 && len(s.fails[len(s.fails)-1].msg) == 0 {
		name = s.fails[len(s.fails)-1].name
	}
	// A timeout names the tests it interrupted.
	if i+2 < len(lines) && strings.TrimSpace(lines[i+1]) == "running tests:" {
		if f := strings.Fields(lines[i+2]); len(f) > 0 {
			name = f[0]
		}
	}
	if name == "" {
		name = s.running
	}
	if name == "" {
		name = "panic"
	}
	// The panic is the message of the test whose FAIL line came
	// just before it with nothing logged.
	if n := len(s.fails); n > 0 && s.fails[n-1].name == name && len(s.fails[n-1].msg) == 0 {
		s.fails[n-1].msg = []string{"panic: " + msg}
	} else {
		s.fails = append(s.fails, goTestFailure{name: name, msg: []string{"panic: " + msg}})
	}
	for i+1 < len(lines) && !goPackageLine().MatchString(lines[i+1]) && !goFailLine().MatchString(lines[i+1]) {
		i++
	}
	return i
}

// hasSubtestFailure reports whether a subtest of name failed: a parent
// that failed only through them is not reported itself.
func (s *goTestScan) hasSubtestFailure(name string) bool {
	for _, f := range s.fails {
		if strings.HasPrefix(f.name, name+"/") {
			return true
		}
	}
	return false
}

var (
	pytestSection = lazyregexp.New(`^_{3,} (.+?) _{3,}$`)
	pytestSummary = lazyregexp.New(`^(FAILED|ERROR) (\S+)(?: - (.*))?$`)
	pytestBanner  = lazyregexp.New(`^=+ .* =+$`)
	pytestWhere   = lazyregexp.New(`^\S+:\d+: \w+`)
)

// ExtractPytest extracts pytest's failures and errors from the short test
// summary (`FAILED tests/test_a.py::test_b - AssertionError: …`), named by
// node id. A summary line without a reason, or with one pytest cut short
// to the terminal's width (`assert ('1', '10'...`), takes the `E` lines of
// the test's section in FAILURES or ERRORS; without a summary (-rN) the
// sections alone are used, named by their titles.
func ExtractPytest(output string) []Observed {
	lines := splitLines(output)
	sections := map[string][]string{}
	var order []string
	var c collector
	var summary []string
	current := ""
	for _, line := range lines {
		if m := pytestSection().FindStringSubmatch(line); m != nil {
			current = m[1]
			if _, ok := sections[current]; !ok {
				order = append(order, current)
				sections[current] = nil
			}
			continue
		}
		if pytestBanner().MatchString(line) {
			current = ""
			continue
		}
		if pytestSummary().MatchString(line) {
			summary = append(summary, line)
			continue
		}
		if current == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "E "); ok && len(sections[current]) < maxMessageLines {
			sections[current] = append(sections[current], strings.TrimSpace(rest))
		} else if len(sections[current]) == 0 && pytestWhere().MatchString(line) {
			// "tests/x.py:5: AssertionError" stands in until E lines come.
			sections["where:"+current] = []string{strings.TrimSpace(line)}
		}
	}
	sectionMessage := func(title string) string {
		if msg := sections[title]; len(msg) > 0 {
			return strings.Join(exceptionFirst(msg), "\n")
		}
		return strings.Join(sections["where:"+title], "\n")
	}
	nodeMessage := func(node string) string {
		file, test, isTest := strings.Cut(node, "::")
		if !isTest {
			return sectionMessage("ERROR collecting " + file)
		}
		if msg := sectionMessage(strings.ReplaceAll(test, "::", ".")); msg != "" {
			return msg
		}
		return sectionMessage("ERROR at setup of " + test)
	}
	for _, line := range summary {
		m := pytestSummary().FindStringSubmatch(line)
		kind, node, msg := m[1], m[2], strings.TrimSpace(m[3])
		// pytest cuts a reason to the terminal's width and ends it with
		// "...": the section's E lines hold it whole.
		if msg == "" || strings.HasSuffix(msg, "...") {
			if full := nodeMessage(node); full != "" {
				msg = full
			}
		}
		if msg == "" {
			msg = kind + " " + node
		}
		c.add(node, msg)
	}
	if len(summary) == 0 {
		for _, title := range order {
			c.add(title, sectionMessage(title))
		}
	}
	return c.out
}

// pythonSyntaxWhere is the first line of Python's report of a syntax
// error: `File "calc.py", line 2`, then the line, then the exception.
var pythonSyntaxWhere = lazyregexp.New(`^File ".*", line \d+`)

// pythonException is an exception's line: `IndentationError: unexpected
// indent`.
var pythonException = lazyregexp.New(`^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning): `)

// exceptionFirst puts the exception of a Python syntax error report ahead
// of its `File …, line N` line, which says where, not what: an edit that
// breaks an import is an IndentationError, and that is its headline.
func exceptionFirst(lines []string) []string {
	if len(lines) < 2 || !pythonSyntaxWhere().MatchString(lines[0]) {
		return lines
	}
	for i := len(lines) - 1; i > 0; i-- {
		if pythonException().MatchString(lines[i]) {
			out := append([]string{lines[i]}, lines[:i]...)
			return append(out, lines[i+1:]...)
		}
	}
	return lines
}

var (
	jestBullet    = lazyregexp.New(`^\s*● (.+)$`)
	jestFile      = lazyregexp.New(`^ FAIL  (\S+)(?: > (.+))?`)
	jestCodeFrame = lazyregexp.New(`^\s*(?:>\s*)?\d+\s?\|`)
	jestStack     = lazyregexp.New(`^\s*(?:at |❯ )`)
)

// ExtractJest extracts jest's and vitest's failures: jest's
// `● Suite › test` blocks and vitest's ` FAIL  file > Suite > test`
// blocks, named by the test's title, with the first lines of the error
// before its code frame or stack. "Test suite failed to run" is named
// after its file.
func ExtractJest(output string) []Observed {
	lines := splitLines(output)
	var c collector
	file := ""
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		var name string
		if m := jestFile().FindStringSubmatch(line); m != nil {
			file = m[1]
			if m[2] == "" {
				// A jest suite header; vitest prints a bare file only for
				// a suite that failed to load, with its error below.
				if !strings.Contains(line, "[") {
					continue
				}
				name = file + " › Test suite failed to run"
			} else {
				name = m[2]
			}
		} else if m := jestBullet().FindStringSubmatch(line); m != nil {
			name = strings.TrimSpace(m[1])
			if name == "Test suite failed to run" && file != "" {
				name = file + " › " + name
			}
		} else {
			continue
		}
		var msg []string
		for i+1 < len(lines) && len(msg) < maxMessageLines {
			next := lines[i+1]
			if jestBullet().MatchString(next) || jestFile().MatchString(next) || jestCodeFrame().MatchString(next) || jestStack().MatchString(next) {
				break
			}
			i++
			if t := strings.TrimSpace(next); t != "" {
				msg = append(msg, t)
			} else if len(msg) > 0 && strings.HasPrefix(strings.TrimSpace(lines[min(i+1, len(lines)-1)]), "-") {
				// vitest's diff (- Expected / + Received) adds nothing to
				// its one-line assertion message.
				break
			}
		}
		c.add(name, strings.Join(msg, "\n"))
	}
	return c.out
}

var (
	tscLine     = lazyregexp.New(`^(.+?)(?:\((\d+),(\d+)\): | ?:(\d+):(\d+) - )(error TS\d+: .*)$`)
	tscGlobal   = lazyregexp.New(`^error TS\d+: .*$`)
	tscTrailing = lazyregexp.New(`^\s{2,}\S`)
)

// ExtractTSC extracts TypeScript compiler errors in both of tsc's forms,
// `file(line,col): error TS2322: …` and the pretty `file:line:col - error
// TS2322: …`, named by file, with the first indented line that elaborates
// the error. Errors about no file (a bad tsconfig) are named "tsc".
func ExtractTSC(output string) []Observed {
	lines := splitLines(output)
	var c collector
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], " \t")
		name := ""
		if m := tscLine().FindStringSubmatch(line); m != nil {
			name = m[1]
		} else if tscGlobal().MatchString(line) {
			name = "tsc"
		} else {
			continue
		}
		msg := line
		if i+1 < len(lines) && tscTrailing().MatchString(lines[i+1]) {
			msg += "\n" + strings.TrimSpace(lines[i+1])
			i++
		}
		c.add(name, msg)
	}
	return c.out
}

var eslintProblem = lazyregexp.New(`^\s+(\d+):(\d+)\s+(error|warning)\s+(.+?)(?:\s{2,}(\S+))?\s*$`)

// ExtractESLint extracts problems of eslint's default (stylish) format,
// named by file, as `file:line:col: error: message (rule)`. Warnings count
// only when there are no errors, as they fail a check only under
// --max-warnings. ESLint's unix and compact formats are ExtractGeneric's.
func ExtractESLint(output string) []Observed {
	lines := splitLines(output)
	var errs, warnings collector
	file := ""
	for _, line := range lines {
		if line == "" || strings.HasPrefix(line, "✖") {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			file = strings.TrimSpace(line)
			continue
		}
		m := eslintProblem().FindStringSubmatch(line)
		if m == nil || file == "" {
			continue
		}
		msg := file + ":" + m[1] + ":" + m[2] + ": " + m[3] + ": " + m[4]
		if m[5] != "" {
			msg += " (" + m[5] + ")"
		}
		if m[3] == "error" {
			errs.add(file, msg)
		} else {
			warnings.add(file, msg)
		}
	}
	if len(errs.out) > 0 {
		return errs.out
	}
	return warnings.out
}

var genericLine = lazyregexp.New(`^\s*((?:[A-Za-z]:[\\/])?[^\s:]+):(\d+)(?::(\d+))?:\s*(\S.*)$`)

// genericLocation returns the file of a `path:line[:col]: message` line.
// The path must look like one: a dot, a slash or a backslash in it.
func genericLocation(line string) (string, bool) {
	m := genericLine().FindStringSubmatch(line)
	if m == nil || !strings.ContainsAny(m[1], `./\`) {
		return "", false
	}
	return m[1], true
}

// ExtractGeneric extracts `path:line:col: message` and `path:line:
// message` lines, as compilers and linters (gcc, clang, go vet, mypy,
// eslint -f unix) print them, named by path. Warnings and notes count only
// when there is nothing else.
func ExtractGeneric(output string) []Observed {
	var errs, minor collector
	for _, line := range splitLines(output) {
		name, ok := genericLocation(line)
		if !ok {
			continue
		}
		msg := strings.TrimSpace(line)
		body := strings.ToLower(genericLine().FindStringSubmatch(line)[4])
		if strings.HasPrefix(body, "warning") || strings.HasPrefix(body, "note") {
			minor.add(name, msg)
			continue
		}
		errs.add(name, msg)
	}
	if len(errs.out) > 0 {
		return errs.out
	}
	return minor.out
}
