package main

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// screenLines replays what tenax wrote to a terminal cols columns wide, as
// the terminal shows it: carriage returns go back to column 0, "ESC[K"
// erases to the end of the line, other escape sequences are skipped. It
// returns the lines left on the screen (scrollback included), how many
// times a line was redrawn in place, and the lines that were redrawn in
// place although they had reached the last column (where a terminal wraps
// them, so that the redraw lands one line too low). Long log and summary
// lines may wrap; a line drawn over with a carriage return may not.
func screenLines(out string, cols int) (lines []string, redraws int, wraps []string) {
	wide := false // the current line reached the last column
	cur := []rune{}
	col := 0
	flush := func() {
		lines = append(lines, strings.TrimRight(string(cur), " "))
		cur, col = cur[:0:0], 0
	}
	for i := 0; i < len(out); {
		switch c := out[i]; {
		case c == '\r' && strings.HasPrefix(out[i+1:], "\n"):
			// The terminal's own end of line (the pty's ONLCR).
			i++
		case c == '\r':
			if wide {
				wraps = append(wraps, string(cur))
			}
			col, wide = 0, false
			redraws++
			i++
		case c == '\n':
			flush()
			wide = false
			i++
		case c == 0x1b:
			j := i + 1
			if j < len(out) && out[j] == '[' {
				j++
				for j < len(out) && (out[j] < 0x40 || out[j] > 0x7e) {
					j++
				}
				if j < len(out) && out[j] == 'K' && col < len(cur) {
					cur = cur[:col]
				}
			}
			i = j + 1
		default:
			r, n := utf8.DecodeRuneInString(out[i:])
			i += n
			if r < ' ' {
				continue
			}
			if col >= cols-1 {
				wide = true
			}
			if col < len(cur) {
				cur[col] = r
			} else {
				for len(cur) < col {
					cur = append(cur, ' ')
				}
				cur = append(cur, r)
			}
			col++
		}
	}
	if len(cur) > 0 {
		flush()
	}
	return lines, redraws, wraps
}

// TestProgressLineFitsEightyColumns is the regression test of the progress
// line that was wider than the terminal: on 80 columns every refresh
// printed a new line, the bar shrank to "||" and WARN log lines were glued
// onto it. Now the line is redrawn in place, never reaches the last
// column, and log lines appear whole above it.
func TestProgressLineFitsEightyColumns(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 30)
	// Items 5, 6 and 7 fail as a missing command would: the breaker opens
	// (a WARN log line), waits, and closes again on the next success.
	w.write("tool.sh", "#!/bin/sh\ncase $1 in 5|6|7) echo \"no license for $1\" >&2; exit 127;; esac\nsleep 0.05\necho ok\n", 0o755)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./tool.sh", "{{.n}}"]
breaker: {threshold: 3, on_trip: wait, reset_timeout: 300ms}
concurrency: {max: 1}
`, 0o644)
	term := startOnTerminalWidth(t, w, 80, "run", "job.yaml")
	if code := term.exitCode(); code != 1 {
		t.Fatalf("exit %d, want 1 (three items failed)", code)
	}
	term.expect("27 succeeded, 3 failed")
	term.mu.Lock()
	out := term.out.String()
	term.mu.Unlock()

	lines, redraws, wraps := screenLines(out, 80)
	for _, w := range wraps {
		t.Errorf("a line reached the 80th column and wrapped: %q", w)
	}
	if redraws < 3 {
		t.Errorf("the progress line was drawn %d times; a run of 30 slow items refreshes it more", redraws)
	}
	progress, warns := 0, 0
	for _, l := range lines {
		isProgress := strings.Contains(l, "/30")
		if isProgress {
			progress++
		}
		if strings.Contains(l, "level=WARN") {
			warns++
			if !strings.HasPrefix(l, "time=") || isProgress {
				t.Errorf("a log line is not on a line of its own: %q", l)
			}
		}
	}
	if progress != 1 {
		t.Errorf("%d progress lines left on the screen, want the one redrawn in place:\n%s", progress, strings.Join(lines, "\n"))
	}
	if warns == 0 {
		t.Errorf("no WARN line about the breaker on the screen:\n%s", strings.Join(lines, "\n"))
	}
}
