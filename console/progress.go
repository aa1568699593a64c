package console

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/engine"
)

// Progress reports a run's statistics while it goes: on a live Screen, one
// status line redrawn in place and fitted to the terminal's width; elsewhere,
// a plain line every Interval.
type Progress struct {
	screen   *Screen
	interval time.Duration
	stats    func() engine.Stats
	paused   atomic.Bool
	// Width returns the terminal's width in columns, read at every redraw
	// so that a resized window is followed (80 when nil or not positive).
	Width func() int
}

// NewProgress returns a Progress that reads stats (typically
// (*engine.Engine).Stats) and writes to screen. interval is the plain
// line's period (0: 5s); the live line is refreshed ten times a second.
func NewProgress(screen *Screen, interval time.Duration, stats func() engine.Stats) *Progress {
	if interval <= 0 {
		interval = 5 * time.Second
	}
	return &Progress{screen: screen, interval: interval, stats: stats}
}

// Pause stops drawing, and erases the live line, while the operator is
// asked something; Resume draws again.
func (p *Progress) Pause() {
	p.paused.Store(true)
	p.screen.ClearStatus()
}

// Resume undoes Pause. The operator's answer ended the prompt's line.
func (p *Progress) Resume() {
	p.screen.AtLineStart()
	p.paused.Store(false)
}

// Run reports until ctx is done, then draws a last time and, for the live
// line, leaves it on the terminal and moves below it.
func (p *Progress) Run(ctx context.Context) {
	if p.screen.Live() {
		p.runLive(ctx)
		return
	}
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !p.paused.Load() {
				fmt.Fprintln(p.screen, Line(p.stats(), time.Now()))
			}
		}
	}
}

func (p *Progress) runLive(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	last := ""
	draw := func() {
		if p.paused.Load() {
			last = ""
			return
		}
		width := 80
		if p.Width != nil {
			if w := p.Width(); w > 0 {
				width = w
			}
		}
		line := Fit(p.stats(), time.Now(), width)
		if line != last {
			p.screen.SetStatus(line)
			last = line
		}
	}
	draw()
	for {
		select {
		case <-ctx.Done():
			draw()
			p.screen.EndStatus()
			return
		case <-t.C:
			draw()
		}
	}
}

// Line renders one plain progress line: done/total, rate, ETA, in flight,
// retries, failures and the breaker state.
func Line(s engine.Stats, now time.Time) string {
	todo := s.Planned
	pct := 100.0
	if todo > 0 {
		pct = 100 * float64(s.Done) / float64(todo)
	}
	rate, eta := rateAndETA(s, now)
	etaText := "ETA -"
	if eta >= 0 {
		etaText = "ETA " + eta.Round(time.Second).String()
	}
	return fmt.Sprintf("progress: %d/%d (%.1f%%) | %.1f items/s | %s | %s", s.Done, todo, pct, rate, etaText, details(s))
}

// details is the tail of the plain line.
func details(s engine.Stats) string {
	parts := []string{
		fmt.Sprintf("in flight %d/%d", s.InFlight, s.Limit),
		fmt.Sprintf("retries %d", s.Retries),
		fmt.Sprintf("failed %d", s.Failed),
		fmt.Sprintf("breaker %s", s.Breaker),
	}
	if s.HealAttempts > 0 {
		parts = append(parts, fmt.Sprintf("re-asks %d", s.HealAttempts))
	}
	if t := s.Usage.Total(); t > 0 {
		parts = append(parts, fmt.Sprintf("tokens %d", t))
	}
	if s.CostUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.4f", s.CostUSD))
	}
	return strings.Join(parts, " | ")
}

// field is one part of the live line. Fields keep their order on the line;
// the least important (highest rank) are dropped first when the line does
// not fit.
type field struct {
	text string
	sep  string // what goes before it, unless it comes first
	rank int    // 0 is kept longest
	bar  bool   // the bar, which takes the room left over
}

// Bar widths, brackets included.
const (
	minBar = 12
	maxBar = 32
)

// Fit renders the live progress line for a terminal width columns wide: the
// line is never longer than width-1 columns (a line as wide as the terminal
// wraps on some terminals, and a wrapped line cannot be redrawn in place).
// When everything does not fit, fields are left out, least important first:
// cost, tokens, re-asks, a closed breaker, retries, in flight, the bar,
// rate, ETA, percentage, failures; done/total and an open breaker stay.
func Fit(s engine.Stats, now time.Time, width int) string {
	room := max(width-1, 1)
	todo := s.Planned
	frac := 1.0
	if todo > 0 {
		frac = min(float64(s.Done)/float64(todo), 1)
	}
	rate, eta := rateAndETA(s, now)
	fields := []field{
		{text: fmt.Sprintf("%d/%d", s.Done, todo), rank: 0},
		{text: fmt.Sprintf("%.1f%%", 100*frac), sep: " ", rank: 4},
		{sep: " ", rank: 7, bar: true},
		{text: fmt.Sprintf("%.1f/s", rate), sep: " ", rank: 6},
	}
	if eta >= 0 {
		fields = append(fields, field{text: "ETA " + eta.Round(time.Second).String(), sep: " ", rank: 5})
	}
	fields = append(fields,
		field{text: fmt.Sprintf("failed %d", s.Failed), sep: " | ", rank: 3},
		field{text: fmt.Sprintf("in flight %d/%d", s.InFlight, s.Limit), sep: " | ", rank: 8},
		field{text: fmt.Sprintf("retries %d", s.Retries), sep: " | ", rank: 9},
	)
	if s.Breaker == breaker.Closed {
		fields = append(fields, field{text: "breaker closed", sep: " | ", rank: 10})
	} else {
		fields = append(fields, field{text: "breaker " + s.Breaker.String(), sep: " | ", rank: 1})
	}
	if s.HealAttempts > 0 {
		fields = append(fields, field{text: fmt.Sprintf("re-asks %d", s.HealAttempts), sep: " | ", rank: 11})
	}
	if t := s.Usage.Total(); t > 0 {
		fields = append(fields, field{text: fmt.Sprintf("tokens %d", t), sep: " | ", rank: 12})
	}
	if s.CostUSD > 0 {
		fields = append(fields, field{text: fmt.Sprintf("$%.4f", s.CostUSD), sep: " | ", rank: 13})
	}

	// Fields are taken most important first while they fit; on
	// a narrow terminal the " | " separators become spaces if that keeps a
	// field the wide ones would lose.
	kept, narrow := choose(fields, room, false), false
	if k := choose(fields, room, true); lostImportant(fields, kept, k) {
		kept, narrow = k, true
	}
	if narrow {
		for i := range fields {
			if fields[i].sep != "" {
				fields[i].sep = " "
			}
		}
	}
	barWidth := min(maxBar, minBar+room-lineWidth(fields, kept, minBar))
	var b strings.Builder
	first := true
	for i, f := range fields {
		if !kept[i] {
			continue
		}
		if !first {
			b.WriteString(f.sep)
		}
		first = false
		if f.bar {
			writeBar(&b, frac, barWidth)
		} else {
			b.WriteString(f.text)
		}
	}
	return cut(b.String(), room)
}

// FitText shortens a live status line of free text to a terminal width
// columns wide, as Fit does the progress line: never longer than width-1
// columns, ending in "…" when it was cut. A width below 2 leaves s as is.
func FitText(s string, width int) string {
	if width < 2 {
		return s
	}
	return cut(s, width-1)
}

// cut shortens s to at most n runes, ending it with "…" when it cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-1, 0)]) + "…"
}

// choose returns which fields to show within room columns: the most
// important first, until one does not fit (then none of less importance
// either: fields leave in a fixed order), the bar at its least width.
// narrow counts every separator as one space.
func choose(fields []field, room int, narrow bool) []bool {
	order := make([]int, len(fields))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(fields[a].rank, fields[b].rank) })
	kept := make([]bool, len(fields))
	for _, i := range order {
		kept[i] = true
		if lineWidthSep(fields, kept, minBar, narrow) > room && fields[i].rank > 0 {
			kept[i] = false
			break
		}
	}
	return kept
}

// lostImportant reports whether a keeps fewer of the fields ranked 3 or
// better (done/total, an open breaker, failures) than b.
func lostImportant(fields []field, a, b []bool) bool {
	na, nb := 0, 0
	for i, f := range fields {
		if f.rank <= 3 {
			if a[i] {
				na++
			}
			if b[i] {
				nb++
			}
		}
	}
	return na < nb
}

// lineWidth is the width of the kept fields, the bar counted as barWidth.
func lineWidth(fields []field, kept []bool, barWidth int) int {
	return lineWidthSep(fields, kept, barWidth, false)
}

// lineWidthSep is lineWidth with every separator one space when narrow.
func lineWidthSep(fields []field, kept []bool, barWidth int, narrow bool) int {
	n, first := 0, true
	for i, f := range fields {
		if !kept[i] {
			continue
		}
		if !first {
			if narrow {
				n++
			} else {
				n += len(f.sep)
			}
		}
		first = false
		if f.bar {
			n += barWidth
		} else {
			n += utf8.RuneCountInString(f.text)
		}
	}
	return n
}

// writeBar draws "[=====>    ]" width columns wide, frac of it filled.
func writeBar(b *strings.Builder, frac float64, width int) {
	inner := width - 2
	filled := int(frac * float64(inner))
	b.WriteByte('[')
	b.WriteString(strings.Repeat("=", filled))
	if filled < inner {
		b.WriteByte('>')
		b.WriteString(strings.Repeat(" ", inner-filled-1))
	}
	b.WriteByte(']')
}

// rateAndETA returns items per second over the time dispatch was open
// since the run started (the operator's pauses, the current one included,
// left out) and the time left at that rate; eta is -1 when it cannot be
// told: before the first item, and while dispatch stands paused for the
// operator (a breaker's question, a check-in, a hold), when no item goes
// and the time left depends on the answer. At a breaker prompt the line
// read "1776.7/s ETA 0s".
func rateAndETA(s engine.Stats, now time.Time) (float64, time.Duration) {
	elapsed := (now.Sub(s.Started) - s.Paused).Seconds()
	if s.Started.IsZero() || elapsed <= 0 || s.Done == 0 {
		return 0, -1
	}
	rate := float64(s.Done) / elapsed
	if !s.PausedSince.IsZero() || s.Hold != nil {
		return rate, -1
	}
	left := s.Planned - s.Done
	if left < 0 {
		left = 0
	}
	return rate, time.Duration(float64(left) / rate * float64(time.Second))
}
