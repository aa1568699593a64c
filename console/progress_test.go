package console_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/console"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/task"
)

func busyStats(state breaker.State) (engine.Stats, time.Time) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return engine.Stats{
		Started: start, Total: 5000, Planned: 5000, Done: 4380, InFlight: 32, Limit: 32,
		Retries: 1234, Failed: 57, Breaker: state, HealAttempts: 88,
		Usage: task.Usage{InputTokens: 1234567, OutputTokens: 345678}, CostUSD: 12.3456,
	}, start.Add(95 * time.Second)
}

// TestFitNeverWrapsFromFortyColumns is the regression test of the progress
// line wider than an 80- or 120-column terminal, which printed a new line
// at every refresh: at any width from 40 columns the line leaves the last
// column free and keeps done/total and the failures.
func TestFitNeverWrapsFromFortyColumns(t *testing.T) {
	for _, state := range []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen} {
		s, now := busyStats(state)
		for width := 40; width <= 220; width++ {
			line := console.Fit(s, now, width)
			if n := utf8.RuneCountInString(line); n > width-1 {
				t.Fatalf("width %d, breaker %s: line is %d columns: %q", width, state, n, line)
			}
			for _, must := range []string{"4380/5000", "failed 57"} {
				if !strings.Contains(line, must) {
					t.Errorf("width %d: %q dropped %q, which goes last", width, line, must)
				}
			}
			if state != breaker.Closed && !strings.Contains(line, "breaker "+state.String()) {
				t.Errorf("width %d: %q hides that the breaker is %s", width, line, state)
			}
		}
	}
}

// TestFitDropsFieldsByPriority: the fields leave in a fixed order as the
// terminal narrows, cost first, and the bar is never squeezed below a
// readable width ("||" was what the old line showed).
func TestFitDropsFieldsByPriority(t *testing.T) {
	s, now := busyStats(breaker.Closed)
	cases := []struct {
		width         int
		shows, hidden []string
	}{
		{220, []string{"4380/5000", "87.6%", "46.1/s", "ETA 13s", "failed 57", "in flight 32/32", "retries 1234", "breaker closed", "re-asks 88", "tokens 1580245", "$12.3456", "[===="}, nil},
		{120, []string{"4380/5000", "87.6%", "[====", "46.1/s", "ETA 13s", "failed 57", "in flight 32/32", "retries 1234"}, []string{"$12.3456", "tokens"}},
		{80, []string{"4380/5000", "87.6%", "[====", "46.1/s", "ETA 13s", "failed 57", "in flight"}, []string{"breaker", "re-asks", "tokens", "$"}},
		{40, []string{"4380/5000", "87.6%", "ETA 13s", "failed 57"}, []string{"[", "in flight", "retries"}},
	}
	for _, c := range cases {
		line := console.Fit(s, now, c.width)
		for _, want := range c.shows {
			if !strings.Contains(line, want) {
				t.Errorf("width %d: %q lacks %q", c.width, line, want)
			}
		}
		for _, gone := range c.hidden {
			if strings.Contains(line, gone) {
				t.Errorf("width %d: %q still shows %q, a field of lower priority", c.width, line, gone)
			}
		}
		if i := strings.IndexByte(line, '['); i >= 0 {
			if j := strings.IndexByte(line, ']'); j-i+1 < 12 {
				t.Errorf("width %d: the bar is %d columns wide: %q", c.width, j-i+1, line)
			}
		}
	}
}

// TestScreenPrintsLogLinesAboveTheStatus is the regression test of WARN
// lines glued onto the progress bar: a line written while the status line
// is drawn erases it, appears on a line of its own, and the status line is
// drawn again under it; a prompt's unfinished line is never drawn over.
func TestScreenPrintsLogLinesAboveTheStatus(t *testing.T) {
	var out strings.Builder
	s := console.NewScreen(&out, true)
	s.SetStatus("1/10 bar")
	s.Write([]byte("level=WARN msg=open\n"))
	if want := "\r\x1b[K1/10 bar\x1b[K" + "\r\x1b[Klevel=WARN msg=open\n1/10 bar"; out.String() != want {
		t.Fatalf("wrote %q\nwant  %q", out.String(), want)
	}
	out.Reset()
	s.ClearStatus()
	s.Write([]byte("> "))
	s.SetStatus("2/10 bar")
	if want := "\r\x1b[K> "; out.String() != want {
		t.Fatalf("the status line was drawn over a prompt: %q, want %q", out.String(), want)
	}
	out.Reset()
	s.AtLineStart()
	s.SetStatus("3/10 bar")
	s.EndStatus()
	if want := "\r\x1b[K3/10 bar\x1b[K\n"; out.String() != want {
		t.Fatalf("after the answer: %q, want %q", out.String(), want)
	}
}

// TestScreenNotLivePassesTextThrough: in a log file or a pipe there is no
// status line and no escape sequence.
func TestScreenNotLivePassesTextThrough(t *testing.T) {
	var out strings.Builder
	s := console.NewScreen(&out, false)
	s.SetStatus("1/10")
	s.Write([]byte("a line\n"))
	s.EndStatus()
	if out.String() != "a line\n" {
		t.Errorf("wrote %q, want only the line", out.String())
	}
}

// TestFitTextLeavesTheLastColumnFree: a free-text live line (tenax fix's)
// is cut to width-1 columns, so it never wraps; an unknown width keeps it.
func TestFitTextLeavesTheLastColumnFree(t *testing.T) {
	long := "… attempt 3/8: the fixer works on TestParseDurationWithUnits (try 1/5) [0 regressed, 2 new, 1 active, 4 fixed] 12s"
	cases := []struct {
		width int
		want  int
	}{{40, 39}, {80, 79}, {200, utf8.RuneCountInString(long)}, {0, utf8.RuneCountInString(long)}}
	for _, c := range cases {
		got := console.FitText(long, c.width)
		if n := utf8.RuneCountInString(got); n != c.want {
			t.Errorf("width %d: %d columns (%q), want %d", c.width, n, got, c.want)
		}
	}
}

// The terminal's rate counted a breaker's pause: 2.6 items/s and an ETA of
// 16 minutes right after Continue for a run that needed two.
func TestRateLeavesOutTheOperatorsPause(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	s := engine.Stats{Started: start, Planned: 1000, Done: 500, Paused: 15 * time.Minute}
	got := console.Line(s, start.Add(15*time.Minute+100*time.Second))
	if !strings.Contains(got, "5.0 items/s") || !strings.Contains(got, "ETA 1m40s") {
		t.Errorf("line %q; want 5.0 items/s and ETA 1m40s (500 items in the 100 s dispatch was open)", got)
	}
}

// TestAtABreakerPromptTheETAIsUnknown: at a breaker's question the line
// read "1776.7/s ETA 0s", an ETA of a run that sends nothing until the
// operator answers. While dispatch stands paused for the operator the rate
// is over the time dispatch was open, the current pause left out, and the
// ETA is unknown.
func TestAtABreakerPromptTheETAIsUnknown(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	now := start.Add(160 * time.Second)
	cases := []struct {
		name  string
		stats engine.Stats
	}{
		{"the breaker's question", engine.Stats{Started: start, Planned: 1000, Done: 500, Breaker: breaker.Open,
			Paused: 60 * time.Second, PausedSince: start.Add(100 * time.Second)}},
		{"the operator's hold", engine.Stats{Started: start, Planned: 1000, Done: 500,
			Paused: 60 * time.Second, Hold: &engine.Hold{}}},
	}
	for _, c := range cases {
		line := console.Line(c.stats, now)
		if !strings.Contains(line, "5.0 items/s") || !strings.Contains(line, "ETA -") {
			t.Errorf("%s: line %q; want 5.0 items/s (500 items in the 100 s dispatch was open) and ETA -", c.name, line)
		}
		if fit := console.Fit(c.stats, now, 200); strings.Contains(fit, "ETA") || !strings.Contains(fit, "5.0/s") {
			t.Errorf("%s: live line %q; want 5.0/s and no ETA", c.name, fit)
		}
	}
	open := engine.Stats{Started: start, Planned: 1000, Done: 500, Paused: 60 * time.Second, Resumed: start.Add(160 * time.Second)}
	if line := console.Line(open, now); !strings.Contains(line, "ETA 1m40s") {
		t.Errorf("after the answer: line %q; want ETA 1m40s again", line)
	}
}
