package report

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// Report summarizes a job's checkpoint for `tenax status`: outcomes, the
// failures grouped by error fingerprint, how many attempts items took, and
// what the run consumed.
type Report struct {
	Manifest store.Manifest
	// Note explains a state that status worked out rather than read (a
	// stale job, see CurrentState).
	Note      string
	Succeeded int
	Failed    int
	Pending   int
	// ByClass counts failed items by their class.
	ByClass map[classify.Class]int
	// Groups are the failures grouped by fingerprint, largest first.
	Groups []ErrorGroup
	// Attempts maps a number of task calls to how many items took it.
	Attempts map[int]int
	// HealedItems counts succeeded items that needed at least one re-ask.
	HealedItems int
	CacheHits   int
	Usage       task.Usage
	CostUSD     float64
	// Busy is the summed duration of every recorded item; First and Last
	// bracket the records' finish times, and Began is when the earliest
	// recorded item started (its finish less its duration).
	Busy        time.Duration
	First, Last time.Time
	Began       time.Time
	// Waves are the job's provider batch waves; nil for an online job
	// (or when BuildReport was given no WaveReader).
	Waves []Wave
	// Routes are the outcomes by route (docs/routes.md), the route that
	// produced most records first; nil for a job without routes.
	Routes []RouteReport
	// Tools are agent items' tools (docs/agents.md): calls, errors fed
	// back and failed items by tool, the most failures first; nil for a
	// job without agent items.
	Tools []ToolReport
}

// ToolReport is what one tool of agent items did, over the items' latest
// records.
type ToolReport struct {
	// Name is the tool's name as the model gave it: an unknown tool's
	// too.
	Name string
	// Calls counts the calls the model asked for; ErrorsFedBack those
	// whose error went back to the model (bad arguments, an unknown tool,
	// a failed run).
	Calls, ErrorsFedBack int
	// FailedItems counts the failed items whose failure is laid to the
	// tool (AgentStats.FailedTool): interrupted with no result recorded,
	// or the last error when max_consecutive_errors ended the item.
	FailedItems int
}

// RouteReport is what one route produced, and how many items left it for
// another.
type RouteReport struct {
	Name              string
	Succeeded, Failed int
	// Left counts the records whose tries name the route, once however
	// often: items that met an error there and moved on.
	Left    int
	Usage   task.Usage
	CostUSD float64
	Busy    time.Duration
	// Breaker is what the route's breaker counted over the job's runs
	// (Manifest.RouteBreakers): its faults, and the calls it refused.
	Breaker store.RouteBreaker
}

// Rate returns the items finished per second of the job's runs, and the
// time it divides by: the summed length of the runs that ended properly
// (Manifest.RunSeconds) when it covers every record, else the time from
// the start of the earliest recorded item to the last finish. The first
// and last finish alone would leave out the first item's own duration
// (and a run of one wave of items would seem to take no time at all).
func (r *Report) Rate() (perSecond float64, over time.Duration) {
	done := r.Succeeded + r.Failed
	switch {
	case r.Manifest.RunSeconds > 0 && r.Manifest.State != store.StateRunning && r.Manifest.State != store.StateStale:
		over = time.Duration(r.Manifest.RunSeconds * float64(time.Second))
	case !r.Began.IsZero():
		over = r.Last.Sub(r.Began)
	}
	if over <= 0 || done == 0 {
		return 0, over
	}
	return float64(done) / over.Seconds(), over
}

// ErrorGroup is the failures that share one fingerprint.
type ErrorGroup struct {
	Fingerprint string
	Class       classify.Class
	Count       int
	// Normalized is the message with its variable parts replaced, as the
	// fingerprint saw it; Example is one raw message and ExampleIdx its item.
	Normalized string
	Example    string
	ExampleIdx int
	// Hints are the spec's heal hints whose pattern matches Example.
	Hints []string
}

// Job is what BuildReport reads of a job: its manifest and its latest
// records. A store.Job is one.
type Job interface {
	Manifest() store.Manifest
	Scan(ctx context.Context, fn func(store.Record) error) error
}

// BuildReport reads the job's latest records once, holding one at a time,
// and its batch waves through waves; nil reads none.
func BuildReport(ctx context.Context, j Job, waves WaveReader) (*Report, error) {
	m := j.Manifest()
	r := &Report{Manifest: m, ByClass: map[classify.Class]int{}, Attempts: map[int]int{}}
	groups := map[string]*ErrorGroup{}
	routes := map[string]*RouteReport{}
	tools := map[string]*ToolReport{}
	fps := fingerprints{known: map[fingerprintKey]string{}}
	seen := 0
	err := j.Scan(ctx, func(rec store.Record) error {
		seen++
		countRoute(routes, rec)
		countTools(tools, rec)
		r.Attempts[rec.Attempts]++
		r.Usage = r.Usage.Add(rec.Usage)
		if rec.CostUSD != nil {
			r.CostUSD += *rec.CostUSD
		}
		if rec.CacheHit {
			r.CacheHits++
		}
		r.countTime(rec)
		if !rec.Failed() {
			r.Succeeded++
			if rec.HealAttempts > 0 {
				r.HealedItems++
			}
			return nil
		}
		r.Failed++
		r.ByClass[rec.Class]++
		fp := fps.of(rec)
		g, ok := groups[fp]
		if !ok {
			g = &ErrorGroup{Fingerprint: fp, Class: rec.Class, Normalized: heal.Normalize(rec.Error),
				Example: rec.Error, ExampleIdx: rec.Idx}
			groups[fp] = g
		}
		g.Count++
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the records of %s: %w", m.ID, err)
	}
	r.Pending = max(m.Items-seen, 0)
	addBreakers(routes, m.RouteBreakers)
	for _, rr := range routes {
		r.Routes = append(r.Routes, *rr)
	}
	slices.SortFunc(r.Routes, func(a, b RouteReport) int {
		return cmp.Or(cmp.Compare(b.Succeeded+b.Failed, a.Succeeded+a.Failed), cmp.Compare(a.Name, b.Name))
	})
	r.Tools = sortedTools(tools)
	if waves != nil {
		if r.Waves, err = waves(ctx, j); err != nil {
			return nil, err
		}
	}
	hints := specHints(m.Spec)
	for _, g := range groups {
		for _, h := range hints {
			if h.match.MatchString(g.Example) {
				g.Hints = append(g.Hints, h.text)
			}
		}
		r.Groups = append(r.Groups, *g)
	}
	slices.SortFunc(r.Groups, func(a, b ErrorGroup) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.ExampleIdx, b.ExampleIdx))
	})
	return r, nil
}

// fingerprints gives a failed record its fingerprint. A record written
// before tenax kept fingerprints carries none, and working one out
// normalizes the message through some twenty regexps: about 0.5 ms for a
// 2 KB message, which made status on a million-item job with 100,000 such
// failures take a minute of CPU. A job's failures mostly repeat a few
// messages, so each message's fingerprint is remembered, up to
// maxFingerprintBytes of messages so that many distinct large ones cannot
// grow the memory status needs with the job.
type fingerprints struct {
	known map[fingerprintKey]string
	bytes int
}

type fingerprintKey struct {
	class classify.Class
	msg   string
}

const maxFingerprintBytes = 16 << 20

func (f *fingerprints) of(rec store.Record) string {
	if rec.Fingerprint != "" {
		return rec.Fingerprint
	}
	k := fingerprintKey{rec.Class, rec.Error}
	if fp, ok := f.known[k]; ok {
		return fp
	}
	fp := heal.Fingerprint(rec.Class.String(), rec.Error)
	if f.bytes+len(rec.Error) <= maxFingerprintBytes {
		f.known[k] = fp
		f.bytes += len(rec.Error)
	}
	return fp
}

// countTime adds rec's duration to the busy time, and its span to the
// first and last records' times.
func (r *Report) countTime(rec store.Record) {
	r.Busy += time.Duration(rec.DurationMS) * time.Millisecond
	if rec.FinishedAt.IsZero() {
		return
	}
	if r.First.IsZero() || rec.FinishedAt.Before(r.First) {
		r.First = rec.FinishedAt
	}
	if began := rec.FinishedAt.Add(-time.Duration(rec.DurationMS) * time.Millisecond); r.Began.IsZero() || began.Before(r.Began) {
		r.Began = began
	}
	if rec.FinishedAt.After(r.Last) {
		r.Last = rec.FinishedAt
	}
}

// addBreakers gives each route the breaker counts the job's runs kept.
func addBreakers(routes map[string]*RouteReport, kept map[string]store.RouteBreaker) {
	for name, rb := range kept {
		rr := routes[name]
		if rr == nil {
			// A route whose every call was refused is in no record.
			rr = &RouteReport{Name: name}
			routes[name] = rr
		}
		rr.Breaker = rb
	}
}

// countRoute adds rec to the outcomes of its route and of the routes its
// item left.
func countRoute(routes map[string]*RouteReport, rec store.Record) {
	at := func(name string) *RouteReport {
		rr := routes[name]
		if rr == nil {
			rr = &RouteReport{Name: name}
			routes[name] = rr
		}
		return rr
	}
	for i, t := range rec.Tries {
		// An item that left a route twice left it once.
		if !slices.ContainsFunc(rec.Tries[:i], func(o store.Try) bool { return o.Route == t.Route }) {
			at(t.Route).Left++
		}
	}
	if rec.Route == "" {
		return
	}
	rr := at(rec.Route)
	if rec.Failed() {
		rr.Failed++
	} else {
		rr.Succeeded++
	}
	rr.Usage = rr.Usage.Add(rec.Usage)
	if rec.CostUSD != nil {
		rr.CostUSD += *rec.CostUSD
	}
	rr.Busy += time.Duration(rec.DurationMS) * time.Millisecond
}

// countTools adds an agent item's record to its tools' counts.
func countTools(tools map[string]*ToolReport, rec store.Record) {
	a := rec.Agent
	if a == nil {
		return
	}
	at := func(name string) *ToolReport {
		tr := tools[name]
		if tr == nil {
			tr = &ToolReport{Name: name}
			tools[name] = tr
		}
		return tr
	}
	for name, n := range a.ToolCalls {
		at(name).Calls += n
	}
	for name, n := range a.ToolErrors {
		at(name).ErrorsFedBack += n
	}
	if rec.Failed() && a.FailedTool != "" {
		at(a.FailedTool).FailedItems++
	}
}

// sortedTools lists the tools, the most failed items first, then the
// most errors fed back, then by name.
func sortedTools(tools map[string]*ToolReport) []ToolReport {
	var out []ToolReport
	for _, tr := range tools {
		out = append(out, *tr)
	}
	slices.SortFunc(out, func(a, b ToolReport) int {
		return cmp.Or(cmp.Compare(b.FailedItems, a.FailedItems), cmp.Compare(b.ErrorsFedBack, a.ErrorsFedBack), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// writeTools writes agent items' failures and errors by tool.
func (r *Report) writeTools(b *strings.Builder) {
	for i, tr := range r.Tools {
		label := "Tools:     "
		if i > 0 {
			label = "           "
		}
		fmt.Fprintf(b, "%s%s: %d failed item(s), %d error(s) fed back, %d call(s)\n", label, oneLine(tr.Name, 64), tr.FailedItems, tr.ErrorsFedBack, tr.Calls)
	}
}

// writeRoutes writes the outcomes by route.
func (r *Report) writeRoutes(b *strings.Builder) {
	for i, rr := range r.Routes {
		label := "Routes:    "
		if i > 0 {
			label = "           "
		}
		fmt.Fprintf(b, "%s%s: %d succeeded, %d failed", label, rr.Name, rr.Succeeded, rr.Failed)
		if rr.Left > 0 {
			fmt.Fprintf(b, ", left by %d item(s) (see their tries)", rr.Left)
		}
		if rr.Usage.Total() > 0 {
			fmt.Fprintf(b, " | %d in, %d out", rr.Usage.InputTokens, rr.Usage.OutputTokens)
		}
		if rr.CostUSD > 0 {
			fmt.Fprintf(b, " | $%.4f", rr.CostUSD)
		}
		if rr.Succeeded+rr.Failed > 0 {
			fmt.Fprintf(b, " | %s per item", (rr.Busy / time.Duration(rr.Succeeded+rr.Failed)).Round(time.Millisecond))
		}
		if rr.Breaker.Faults+rr.Breaker.Refused > 0 {
			fmt.Fprintf(b, " | breaker: %d fault(s), %d refused", rr.Breaker.Faults, rr.Breaker.Refused)
		}
		b.WriteByte('\n')
	}
}

// WriteText renders the report for a terminal, showing at most topGroups
// error groups.
func (r *Report) WriteText(w io.Writer, topGroups int) error {
	var b strings.Builder
	r.writeOutcomes(&b)
	r.writeWork(&b)
	r.writeRoutes(&b)
	r.writeTools(&b)
	writeWaves(&b, r.Waves)
	r.writeGroups(&b, topGroups)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeOutcomes writes the job, its state and how its items ended.
func (r *Report) writeOutcomes(b *strings.Builder) {
	m := r.Manifest
	fmt.Fprintf(b, "Job %s", m.ID)
	if m.Name != "" {
		fmt.Fprintf(b, " (%s)", m.Name)
	}
	fmt.Fprintf(b, ": %s\n", m.State)
	if p := m.Paused; p != nil && m.State == store.StateRunning {
		fmt.Fprintf(b, "Paused:    by %s since %s: no new call starts; `tenax continue %s` goes on\n", p.By, p.Since.Local().Format(time.RFC3339), m.ID)
	}
	if r.Note != "" {
		fmt.Fprintf(b, "Note:      %s\n", r.Note)
	}
	if m.StopReason != "" {
		fmt.Fprintf(b, "Stopped:   %s\n", m.StopReason)
	}
	if m.BreakerTrips > 0 {
		fmt.Fprintf(b, "Breaker:   opened %d time(s)\n", m.BreakerTrips)
	}
	if m.InputBytes > 0 {
		fmt.Fprintf(b, "Input:     %s (%d items in its first %s; a --limit run read no further, resume reads on)\n", m.InputPath, m.Items, Bytes(m.InputBytes))
	} else {
		fmt.Fprintf(b, "Input:     %s (%d items)\n", m.InputPath, m.Items)
	}
	fmt.Fprintf(b, "Outcomes:  %d succeeded, %d failed, %d pending\n", r.Succeeded, r.Failed, r.Pending)
	if r.Failed > 0 {
		fmt.Fprintf(b, "Failed by class: %s\n", joinCounts(r.ByClass, "%s %d", ", "))
	}
}

// writeWork writes what the items took: re-asks, attempts, time, tokens.
func (r *Report) writeWork(b *strings.Builder) {
	if r.HealedItems > 0 || r.CacheHits > 0 {
		fmt.Fprintf(b, "Healed:    %d items needed a re-ask; %d served from cache\n", r.HealedItems, r.CacheHits)
	}
	if len(r.Attempts) > 0 {
		fmt.Fprintf(b, "Attempts:  %s  (calls×items)\n", joinCounts(r.Attempts, "%d×%d", "  "))
	}
	if !r.First.IsZero() {
		fmt.Fprintf(b, "Time:      %s to %s", r.Began.Local().Format(time.DateTime), r.Last.Local().Format(time.DateTime))
		if rate, over := r.Rate(); rate > 0 {
			fmt.Fprintf(b, " (%.1f items/s over %s)", rate, over.Round(time.Millisecond))
		}
		fmt.Fprintf(b, ", %s of item time\n", r.Busy.Round(time.Millisecond))
	}
	if r.Usage.Total() > 0 || r.CostUSD > 0 {
		fmt.Fprintf(b, "Tokens:    %d in", r.Usage.InputTokens)
		if u := r.Usage; u.CachedInputTokens > 0 || u.CacheWriteTokens > 0 {
			fmt.Fprintf(b, " (%d from the prompt cache, %d written to it)", u.CachedInputTokens, u.CacheWriteTokens)
		}
		fmt.Fprintf(b, ", %d out", r.Usage.OutputTokens)
		if r.Usage.ReasoningTokens > 0 {
			fmt.Fprintf(b, " (%d reasoning)", r.Usage.ReasoningTokens)
		}
		if r.CostUSD > 0 {
			fmt.Fprintf(b, " | cost $%.4f", r.CostUSD)
		}
		b.WriteByte('\n')
	}
}

// writeGroups writes the largest topGroups error groups.
func (r *Report) writeGroups(b *strings.Builder, topGroups int) {
	if len(r.Groups) == 0 {
		return
	}
	fmt.Fprintf(b, "Top error groups (%d in all):\n", len(r.Groups))
	for i, g := range r.Groups {
		if i == topGroups {
			fmt.Fprintf(b, "  … %d more groups\n", len(r.Groups)-topGroups)
			break
		}
		fmt.Fprintf(b, "  %5d  %-9s %s  %s\n", g.Count, g.Class, g.Fingerprint, oneLine(g.Normalized, 100))
		fmt.Fprintf(b, "         e.g. #%d: %s\n", g.ExampleIdx, oneLine(g.Example, 100))
		for _, h := range g.Hints {
			fmt.Fprintf(b, "         hint: %s\n", oneLine(h, 100))
		}
	}
}

// joinCounts writes each key of m with its count, by format, in the keys'
// order.
func joinCounts[K cmp.Ordered](m map[K]int, format, sep string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf(format, k, m[k]))
	}
	return strings.Join(parts, sep)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

type statusHint struct {
	match *regexp.Regexp
	text  string
}

// specHints reads heal.hints back from the manifest's resolved spec, so that
// status shows which hints each error group met.
func specHints(raw json.RawMessage) []statusHint {
	var sp struct {
		Heal struct {
			Hints []struct {
				Match string `json:"match"`
				Hint  string `json:"hint"`
			} `json:"hints"`
		} `json:"heal"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &sp) != nil {
		return nil
	}
	var out []statusHint
	for _, h := range sp.Heal.Hints {
		re, err := regexp.Compile(h.Match)
		if err != nil {
			continue
		}
		out = append(out, statusHint{match: re, text: h.Hint})
	}
	return out
}

// Bytes writes a byte count as "10.0 MiB", "12.5 KiB" or "300 bytes".
func Bytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
