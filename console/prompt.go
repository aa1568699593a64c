package console

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
)

// Prompter asks the operator what to do when the breaker trips or a
// check-in is due. It is the terminal's engine.Operator, for a run of one
// engine and for a job's workers attended from `tenax run --workers N`
// alike. Answers are read a line at a time; the first letter decides,
// case-insensitively.
type Prompter struct {
	in  *bufio.Reader
	out io.Writer
	// Redact, when set, scrubs secrets from everything the prompter
	// shows: errors and stderr may quote a key a command was given.
	Redact func(string) string
	// Failures, when set, holds the run's recent failures: Inspect then
	// pages through them, newest first, instead of showing only the last.
	Failures *FailureLog
	// Progress, when set, is the live progress line, paused while a
	// question is asked so that it is not drawn over the question.
	Progress *Progress

	// unread is a read of in left running by a question that ended
	// without an answer from here (its context was canceled: the web
	// page answered). The next question takes it over instead of starting
	// a second read that would lose the next line to the first.
	unread chan readLine
	asking atomic.Bool
}

// readLine is a line read from the terminal, and when it arrived.
type readLine struct {
	s   string
	err error
	at  time.Time
}

// print writes s, redacted.
func (p *Prompter) print(s string) {
	if p.Redact != nil {
		s = p.Redact(s)
	}
	io.WriteString(p.out, s)
}

// NewPrompter returns a Prompter that reads answers from in and writes
// questions to out.
func NewPrompter(in io.Reader, out io.Writer) *Prompter {
	return &Prompter{in: bufio.NewReader(in), out: out}
}

// Trip shows the breaker summary of docs/classes.md and asks
// "[C]ontinue  [A]bort  [I]nspect details" until it gets Continue or Abort.
// Inspect prints the last error in full and asks again; with Failures set,
// Inspect again (or N) shows the failure before it, and P the one after,
// through every failure kept. End of input is engine.TripNoAnswer: nobody
// answered, and the run stops as on Abort, saying so. A canceled ctx (the
// page answered, or the run ended) returns it too; that answer is unused.
//
// A trip of a job's shared breaker (r.Shared) is asked in the words the
// worker that tripped it rendered, after a line that says every worker
// waits and that tenax breaker can answer too.
func (p *Prompter) Trip(ctx context.Context, r engine.TripReport) engine.TripDecision {
	defer p.ask()()
	if sh := r.Shared; sh != nil {
		fmt.Fprintf(p.out, "\ntenax: job %s: the circuit breaker tripped on worker %s; every worker holds the job's items until you answer (here, or tenax breaker continue|abort %s)\n", sh.JobID, sh.Owner, sh.JobID)
	}
	return p.askTrip(ctx, NewTripQuestion(r, p.Failures))
}

// ask marks a question on screen and pauses the progress line until the
// function it returns is called.
func (p *Prompter) ask() (done func()) {
	p.asking.Store(true)
	if p.Progress != nil {
		p.Progress.Pause()
	}
	return func() {
		if p.Progress != nil {
			p.Progress.Resume()
		}
		p.asking.Store(false)
	}
}

// Asking reports whether a question is on screen, so that progress
// printed as lines (an attached run's) holds off until it is answered.
func (p *Prompter) Asking() bool { return p.asking.Load() }

// Settled tells the terminal how a trip of a job's shared breaker that it
// was asked about, and did not answer, was settled.
func (p *Prompter) Settled(q engine.SharedTrip, a engine.TripSettled) {
	switch {
	case a.ReadErr != nil:
		fmt.Fprintf(p.out, "tenax: job %s: trip %d of the circuit breaker was answered elsewhere or closed by itself, but reading how failed: %v\n", q.JobID, q.Trip, a.ReadErr)
	case a.TrippedAgain != 0:
		fmt.Fprintf(p.out, "tenax: job %s: trip %d of the circuit breaker was answered elsewhere (or closed by itself), and it has tripped again since (trip %d)\n", q.JobID, q.Trip, a.TrippedAgain)
	case !a.Answered:
		fmt.Fprintf(p.out, "tenax: job %s: the circuit breaker closed before an answer came from here\n", q.JobID)
	default:
		fmt.Fprintf(p.out, "tenax: job %s: answered elsewhere: %s, by %s\n", q.JobID, a.Decision, cmp.Or(a.By, "another operator"))
	}
}

// TripQuestion is a tripped breaker as the operator is asked about it,
// already rendered: so that a breaker that tripped in another process (a
// worker elsewhere, through the database) is asked about in the same
// words as one of this process.
type TripQuestion struct {
	// Summary is TripSummary's text.
	Summary string
	// Failures are Inspect's text of each failure Inspect pages through:
	// the one that tripped the breaker first, then the others, newest
	// first.
	Failures []string
}

// NewTripQuestion renders r, with the failures of log after r's last (log
// may be nil). A trip of a job's shared breaker comes rendered already.
func NewTripQuestion(r engine.TripReport, log *FailureLog) TripQuestion {
	if sh := r.Shared; sh != nil {
		return TripQuestion{Summary: sh.Summary, Failures: sh.Failures}
	}
	q := TripQuestion{Summary: TripSummary(r)}
	for _, f := range failurePages(r.Last, log) {
		q.Failures = append(q.Failures, Inspect(&f))
	}
	return q
}

// askTrip asks a question rendered already (NewTripQuestion).
func (p *Prompter) askTrip(ctx context.Context, q TripQuestion) engine.TripDecision {
	p.print(q.Summary)
	pages := q.Failures
	shown := -1 // the failure Inspect showed last
	for {
		fmt.Fprint(p.out, "[C]ontinue  [A]bort  [I]nspect details\n> ")
		answer, ok := p.readAnswer(ctx)
		if !ok {
			fmt.Fprintln(p.out)
			return engine.TripNoAnswer
		}
		switch answer {
		case 'c':
			return engine.TripContinue
		case 'a':
			return engine.TripAbortRun
		case 'i', 'n', 'p':
			if len(pages) == 0 {
				p.print(Inspect(nil))
				continue
			}
			switch {
			case answer == 'p' && shown <= 0:
				fmt.Fprintf(p.out, "That was the newest failure; showing the oldest kept.\n")
				shown = len(pages) - 1
			case answer == 'p':
				shown--
			case shown == len(pages)-1:
				fmt.Fprintf(p.out, "That was the oldest failure kept; showing the newest again.\n")
				shown = 0
			default:
				shown++
			}
			p.print(pages[shown])
			if len(pages) > 1 {
				fmt.Fprintf(p.out, "Failure %d of %d, newest first: I or N shows the one before, P the one after.\n", shown+1, len(pages))
			}
		default:
			fmt.Fprintln(p.out, "Please answer C, A or I.")
		}
	}
}

// failurePages are the failures Inspect pages through: the one that
// tripped the breaker first, then the others kept, newest first.
func failurePages(last *engine.Failure, log *FailureLog) []engine.Failure {
	var pages []engine.Failure
	if last != nil {
		pages = append(pages, *last)
	}
	if log == nil {
		return pages
	}
	for _, f := range log.Newest() {
		if last != nil && f.Item.Idx == last.Item.Idx && f.Err == last.Err {
			continue
		}
		pages = append(pages, f)
	}
	return pages
}

// CheckIn shows the latest outputs and asks "[C]ontinue  [A]bort"; end
// of input is Abort. A check-in of a job's workers says first that every
// worker waits.
func (p *Prompter) CheckIn(ctx context.Context, c engine.CheckIn) bool {
	defer p.ask()()
	if c.JobID != "" {
		fmt.Fprintf(p.out, "\ntenax: job %s: paused for a check-in; every worker holds the job's items until you answer\n", c.JobID)
	}
	s := c.Stats
	fmt.Fprintf(p.out, "\nCheck-in: %d/%d done, %d failed. Latest results:\n", s.Done, s.Total, s.Failed)
	for _, rec := range c.Latest {
		p.print(fmt.Sprintf("  #%d %s\n", rec.Idx, recordLine(rec)))
	}
	for {
		fmt.Fprint(p.out, "[C]ontinue  [A]bort\n> ")
		answer, ok := p.readAnswer(ctx)
		if !ok {
			fmt.Fprintln(p.out)
			return false
		}
		switch answer {
		case 'c':
			return true
		case 'a':
			return false
		default:
			fmt.Fprintln(p.out, "Please answer C or A.")
		}
	}
}

// readAnswer returns the lower-cased first letter of the next non-empty
// line; false at end of input or when ctx is done.
func (p *Prompter) readAnswer(ctx context.Context) (byte, bool) {
	asked := time.Now()
	for {
		ch := p.unread
		if ch == nil {
			ch = make(chan readLine, 1)
			go func() {
				s, err := p.in.ReadString('\n')
				ch <- readLine{s, err, time.Now()}
			}()
		}
		p.unread = nil
		var l readLine
		select {
		case <-ctx.Done():
			p.unread = ch
			return 0, false
		case l = <-ch:
		}
		if l.err == nil && l.at.Before(asked) {
			// Typed before this question was asked: an answer to an
			// earlier one (already answered elsewhere), not to this.
			continue
		}
		s := strings.TrimSpace(l.s)
		if s != "" {
			return strings.ToLower(s)[0], true
		}
		if l.err != nil {
			return 0, false
		}
	}
}

// TripSummary renders the breaker summary of docs/classes.md:
//
//	Circuit breaker open: 5 consecutive failures
//	Last error: fatal (401 invalid_api_key): Incorrect API key provided
//	Failed item: #152 {"id": "hsk3_152", "simplified": "辆"}
//	Processed: 438/5000 | Failed: 5 | Success rate: 98.9%
func TripSummary(r engine.TripReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nCircuit breaker open: %s\n", r.Reason)
	if f := r.Last; f != nil {
		fmt.Fprintf(&b, "Last error: %s\n", ErrorLine(f.Decision.Class, f.Err))
		fmt.Fprintf(&b, "Failed item: #%d %s\n", f.Item.Idx, truncate(compactJSON(f.Item.Raw), 200))
	}
	s := r.Stats
	processed := s.Succeeded + s.Failed
	rate := 0.0
	if processed > 0 {
		rate = 100 * float64(s.Succeeded) / float64(processed)
	}
	fmt.Fprintf(&b, "Processed: %d/%d | Failed: %d | Success rate: %.1f%%\n", processed, s.Total, s.Failed, rate)
	return b.String()
}

// ErrorLine renders an error as "class (status code): message", the form
// of the breaker summary's "Last error" line.
func ErrorLine(class classify.Class, err error) string {
	if err == nil {
		return class.String()
	}
	var tags []string
	var sc classify.StatusCoder
	if errors.As(err, &sc) && sc.HTTPStatus() != 0 {
		tags = append(tags, fmt.Sprint(sc.HTTPStatus()))
	}
	var pc classify.ProviderCoder
	if errors.As(err, &pc) && pc.ProviderCode() != "" {
		tags = append(tags, pc.ProviderCode())
	}
	var ec classify.ExitCoder
	if len(tags) == 0 && errors.As(err, &ec) {
		if ec.ExitCode() >= 0 {
			tags = append(tags, fmt.Sprintf("exit %d", ec.ExitCode()))
		} else {
			tags = append(tags, "killed by signal")
		}
	}
	msg := firstLine(err.Error())
	if len(tags) == 0 {
		return fmt.Sprintf("%s: %s", class, msg)
	}
	return fmt.Sprintf("%s (%s): %s", class, strings.Join(tags, " "), withoutTags(msg, tags))
}

// withoutTags drops from msg the status and code that tags already say,
// where a part of the message (its start, or what follows a "cause: ")
// begins with them: a provider's error reads "429 rate_limit_exceeded: …"
// and an http task's "http: 503 Service Unavailable: …", and the line
// said "retryable (429 rate_limit_exceeded): 429 rate_limit_exceeded: …".
func withoutTags(msg string, tags []string) string {
	for start := 0; ; {
		if rest, ok := cutTags(strings.TrimPrefix(msg[start:], "http: "), tags); ok {
			return msg[:start] + rest
		}
		i := strings.Index(msg[start:], ": ")
		if i < 0 {
			return msg
		}
		start += i + 2
	}
}

// cutTags cuts the tags, in order, from the start of s; ok says at least
// the first was there, as a word of its own.
func cutTags(s string, tags []string) (rest string, ok bool) {
	for _, tag := range tags {
		r, found := strings.CutPrefix(s, tag)
		if !found || r != "" && r[0] != ' ' && r[0] != ':' {
			break
		}
		s, ok = strings.TrimLeft(r, " "), true
	}
	if !ok {
		return "", false
	}
	return strings.TrimPrefix(s, ": "), true
}

// Inspect renders the last failure in full: class and why, status, provider
// code, request id, the cause chain, and the first lines of stderr or body.
func Inspect(f *engine.Failure) string {
	if f == nil {
		return "No failure recorded yet.\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nItem:       #%d %s\n", f.Item.Idx, truncate(compactJSON(f.Item.Raw), 500))
	fmt.Fprintf(&b, "Class:      %s\n", f.Decision.Class)
	if f.Decision.Reason != "" {
		fmt.Fprintf(&b, "Because:    %s\n", f.Decision.Reason)
	}
	fmt.Fprintf(&b, "Attempts:   %d\n", f.Attempts)
	err := f.Err
	if err == nil {
		return b.String()
	}
	var sc classify.StatusCoder
	if errors.As(err, &sc) && sc.HTTPStatus() != 0 {
		fmt.Fprintf(&b, "Status:     %d\n", sc.HTTPStatus())
	}
	var pc classify.ProviderCoder
	if errors.As(err, &pc) && pc.ProviderCode() != "" {
		fmt.Fprintf(&b, "Code:       %s\n", pc.ProviderCode())
	}
	var ri classify.RequestIDer
	if errors.As(err, &ri) && ri.RequestID() != "" {
		fmt.Fprintf(&b, "Request id: %s\n", ri.RequestID())
	}
	var ec classify.ExitCoder
	if errors.As(err, &ec) {
		fmt.Fprintf(&b, "Exit code:  %d\n", ec.ExitCode())
	}
	b.WriteString("Error chain:\n")
	for i, e := range causeChain(err) {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, firstLine(e))
	}
	var se classify.StderrCarrier
	if errors.As(err, &se) && strings.TrimSpace(se.Stderr()) != "" {
		b.WriteString("Stderr or body (first lines):\n")
		writeIndented(&b, headLines(se.Stderr(), 10))
	}
	return b.String()
}

// causeChain lists the distinct messages along err's wrap chain, outermost
// first, following the first branch of multi-errors.
func causeChain(err error) []string {
	var out []string
	seen := map[string]bool{}
	for e := err; e != nil; {
		msg := e.Error()
		if !seen[msg] {
			seen[msg] = true
			out = append(out, msg)
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			e = u.Unwrap()
		case interface{ Unwrap() []error }:
			errs := u.Unwrap()
			if len(errs) == 0 {
				e = nil
			} else {
				e = errs[len(errs)-1]
			}
		default:
			e = nil
		}
	}
	return out
}

func recordLine(r store.Record) string {
	if r.Failed() {
		return fmt.Sprintf("failed (%s): %s", r.Class, truncate(firstLine(r.Error), 160))
	}
	return truncate(compactJSON(r.Output), 160)
}

func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func headLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("… (%d more lines)", len(lines)-n))
	}
	return strings.Join(lines, "\n")
}

func writeIndented(b *strings.Builder, s string) {
	for _, l := range strings.Split(s, "\n") {
		b.WriteString("  ")
		b.WriteString(l)
		b.WriteByte('\n')
	}
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
