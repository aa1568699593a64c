package console

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/tenaxhq/tenax/engine"
)

// Progress reports a run's statistics while it goes: on a terminal, one
// live line redrawn in place; elsewhere, a plain line every Interval.
type Progress struct {
	out      io.Writer
	live     bool
	interval time.Duration
	stats    func() engine.Stats
	paused   atomic.Bool
}

// Pause stops drawing, and clears the live line, while the operator is
// asked something; Resume draws again.
func (p *Progress) Pause() {
	if !p.paused.Swap(true) && p.live {
		fmt.Fprint(p.out, "\r\033[K")
	}
}

// Resume undoes Pause.
func (p *Progress) Resume() { p.paused.Store(false) }

// NewProgress returns a Progress that reads stats (typically
// (*engine.Engine).Stats) and writes to out. live selects the redrawn
// line; interval is the plain line's period (0: 5s) and the live line's
// refresh is ten times a second.
func NewProgress(out io.Writer, live bool, interval time.Duration, stats func() engine.Stats) *Progress {
	if interval <= 0 {
		interval = 5 * time.Second
	}
	return &Progress{out: out, live: live, interval: interval, stats: stats}
}

// Run reports until ctx is done, then draws a last time and, for the live
// line, ends it with a newline so the summary starts on a line of its own.
func (p *Progress) Run(ctx context.Context) {
	if p.live {
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
				fmt.Fprintln(p.out, Line(p.stats(), time.Now()))
			}
		}
	}
}

func (p *Progress) runLive(ctx context.Context) {
	s := p.stats()
	bar := progressbar.NewOptions64(int64(max(s.Planned, 1)),
		progressbar.OptionSetWriter(p.out),
		progressbar.OptionSetWidth(20),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("items"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionUseANSICodes(true),
	)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	draw := func() {
		if p.paused.Load() {
			return
		}
		s := p.stats()
		bar.Describe(details(s))
		_ = bar.Set64(int64(s.Done))
	}
	for {
		select {
		case <-ctx.Done():
			draw()
			fmt.Fprintln(p.out)
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

// details is the part of the line the progress bar does not draw itself.
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

// rateAndETA returns items per second since the run started and the time
// left at that rate; eta is -1 when it cannot be told yet.
func rateAndETA(s engine.Stats, now time.Time) (float64, time.Duration) {
	elapsed := now.Sub(s.Started).Seconds()
	if s.Started.IsZero() || elapsed <= 0 || s.Done == 0 {
		return 0, -1
	}
	rate := float64(s.Done) / elapsed
	left := s.Planned - s.Done
	if left < 0 {
		left = 0
	}
	return rate, time.Duration(float64(left) / rate * float64(time.Second))
}
