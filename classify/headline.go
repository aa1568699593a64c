package classify

import "strings"

// Headline returns the line of a program's stderr that says what went
// wrong: the exception line that ends a Python traceback
// ("FileNotFoundError: [Errno 2] No such file or directory: 'a.txt'"), a Go
// program's "panic: …" line, and otherwise the last non-empty line, where
// most tools print their conclusion. It is "" for blank stderr.
//
// One rule for every place that shows a command's failure (an exec task's
// error, a command validator's, their fingerprints and error groups) keeps
// the same failure named the same way everywhere.
func Headline(stderr string) string {
	line, _ := headline(stderr)
	return line
}

// headline is Headline, and whether the line ends a Python traceback or is
// a Go panic: then the lines around it are frames, source code and
// goroutine dumps, not the program's words.
func headline(stderr string) (line string, traceback bool) {
	lines := strings.Split(strings.ReplaceAll(stderr, "\r\n", "\n"), "\n")
	for _, l := range lines {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "panic: ") || t == "panic:" {
			return t, true
		}
	}
	last := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			last = i
			break
		}
	}
	if last < 0 {
		return "", false
	}
	// A Python traceback ends with the exception, unindented, after the
	// indented frames; notes (PEP 678) and chained tracebacks come before
	// the last "Traceback" header's exception line, so the last unindented
	// line after the last header is the one.
	tb := -1
	for i := last; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "Traceback (most recent call last):") {
			tb = i
			break
		}
	}
	if tb >= 0 {
		for i := tb + 1; i <= last; i++ {
			l := lines[i]
			if l != "" && l[0] != ' ' && l[0] != '\t' && !strings.HasPrefix(l, "During handling") && !strings.HasPrefix(l, "The above exception") {
				return strings.TrimSpace(l), true
			}
		}
	}
	return strings.TrimSpace(lines[last]), false
}
