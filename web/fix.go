package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/fix"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/internal/lazyregexp"
)

// Fix runs on the page: the runs under Config.FixHome listed beside the
// jobs, and each run's page read from its directory (state.json,
// audit.jsonl, attempts/*.patch, checks/*.log), so it works for a run in
// this process (tenax fix --ui) or in any other (tenax ui). The page's
// levers queue fix.Instructions that the loop applies between attempts.

// shownStatuses is the order errors are counted and listed in.
var shownStatuses = []string{string(heal.StatusRegressed), string(heal.StatusNew), string(heal.StatusActive), string(fix.StatusAbandoned), string(heal.StatusFixed)}

// Bounds of what one attempt shows inline; the whole file is a link away.
const (
	maxInlinePatch = 64 << 10
	maxInlineCheck = 16 << 10
)

// fixRunRow is a fix run in the list.
type fixRunRow struct {
	ID, Name, Outcome, Reason string
	Updated                   time.Time
	Attempts, MaxAttempts     int
	Fixed, Errors             int
}

// fixData is what a fix run's page renders.
type fixData struct {
	ID, Dir, Outcome, CSRF string
	State                  *fix.State
	// Running: the loop is at work and heeds the levers before its next
	// attempt; otherwise they wait for tenax fix --resume.
	Running bool
	// Spent is the attempts made in all.
	Spent int
	// Doing says what the loop does now; Current is the error it is on.
	Doing   string
	Current string
	Counts  []statusCount
	Errors  []fixErrorRow
	// Attempts are the attempts, newest first: the one in progress, then
	// the finished.
	Attempts []fixAttemptRow
	Queued   []fix.Instruction
	Operator []fix.Instruction
	Err      string
}

type statusCount struct {
	Status string
	N      int
}

type fixErrorRow struct {
	heal.TrackedError
	Shown                   string
	Skipped, First, Current bool
}

type fixAttemptRow struct {
	fix.AuditRecord
	Patch, PatchCut     string
	CheckTail, CheckCut string
}

// fixOn reports whether fix runs are shown, answering 404 when not.
func (s *Server) fixOn(w http.ResponseWriter) bool {
	if s.cfg.FixHome == "" {
		http.Error(w, "this page shows no fix runs", http.StatusNotFound)
		return false
	}
	return true
}

// fixRoutes adds the fix runs' pages and their levers (POST, behind cop
// and the form secret, as the job page's answers).
func (s *Server) fixRoutes(cop *http.CrossOriginProtection) {
	s.mux.HandleFunc("GET /fixes", s.fixesPage)
	s.mux.HandleFunc("GET /fixes/{id}", s.fixPage)
	s.mux.HandleFunc("GET /fixes/{id}/events", s.fixEvents)
	s.mux.HandleFunc("GET /fixes/{id}/{dir}/{file}", s.fixFile)
	s.mux.Handle("POST /fixes/{id}/instruct", cop.Handler(http.HandlerFunc(s.instruct)))
}

// fixHome redirects "/" to the fix run Config.Fix names, reporting
// whether it did.
func (s *Server) fixHome(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.Fix == "" || s.cfg.FixHome == "" {
		return false
	}
	http.Redirect(w, r, "/fixes/"+url.PathEscape(s.cfg.Fix), http.StatusSeeOther)
	return true
}

// fixRuns lists the fix runs under FixHome, newest first; none without it.
func (s *Server) fixRuns() []fixRunRow {
	if s.cfg.FixHome == "" {
		return nil
	}
	base := fix.FixesDir(s.cfg.FixHome)
	entries, _ := os.ReadDir(base)
	var out []fixRunRow
	for _, e := range slices.Backward(entries) {
		if !e.IsDir() || !fix.IsID(e.Name()) {
			continue
		}
		dir := filepath.Join(base, e.Name())
		st, err := (&fix.Store{Dir: dir}).Load()
		if err != nil {
			out = append(out, fixRunRow{ID: e.Name(), Outcome: "unreadable", Reason: err.Error()})
			continue
		}
		row := fixRunRow{ID: st.ID, Name: st.Name, Outcome: fix.CurrentOutcome(dir, st), Reason: st.Reason,
			Updated: st.Updated, Attempts: spentOf(st), MaxAttempts: st.Budget.MaxAttempts}
		errs, _ := st.TrackedErrors()
		for _, te := range errs {
			row.Errors++
			if te.Status == heal.StatusFixed {
				row.Fixed++
			}
		}
		out = append(out, row)
	}
	return out
}

func (s *Server) fixesPage(w http.ResponseWriter, r *http.Request) {
	if !s.fixOn(w) {
		return
	}
	s.render(w, "fixes.html", map[string]any{"FixRuns": s.fixRuns()})
}

// spentOf is the attempts a run has made in all, the one in progress
// included.
func spentOf(st *fix.State) int {
	n := 0
	for _, a := range st.Attempts {
		n = max(n, a.Attempt)
	}
	if st.Pending != nil {
		n = max(n, st.Pending.Attempt)
	}
	return n
}

func (s *Server) fixData(ctx context.Context, id string) (*fixData, error) {
	store, err := fix.OpenStore(s.cfg.FixHome, id)
	if err != nil {
		return nil, err
	}
	st, err := store.Load()
	if err != nil {
		return nil, err
	}
	d := &fixData{ID: st.ID, Dir: store.Dir, CSRF: s.formSecret(ctx), State: st, Outcome: fix.CurrentOutcome(store.Dir, st), Spent: spentOf(st)}
	d.Running = d.Outcome == fix.OutcomeRunning
	errs, err := st.TrackedErrors()
	if err != nil {
		d.Err = err.Error()
	}
	d.rows(errs)
	d.doing()
	if d.Queued, err = store.Queued(st); err != nil {
		d.Err = err.Error()
	}
	d.Operator = slices.Clone(st.Operator)
	slices.Reverse(d.Operator)
	recs, err := store.ReadAudit()
	if err != nil {
		d.Err = err.Error()
	}
	if p := st.Pending; p != nil && d.Running {
		// The attempt in progress heads the list, its verdict to come.
		rec := fix.AuditRecord{Attempt: p.Attempt, Fingerprint: p.Fingerprint, Result: "in progress", Time: p.Started}
		for _, e := range errs {
			if e.Fingerprint == p.Fingerprint {
				rec.Name, rec.Message, rec.ErrorStatus = e.Name, e.Message, string(e.Status)
			}
		}
		d.Attempts = append(d.Attempts, fixAttemptRow{AuditRecord: rec})
	}
	for _, rec := range slices.Backward(recs) {
		if rec.Kind == "attempt" {
			d.Attempts = append(d.Attempts, attemptRow(store.Dir, rec))
		}
	}
	return d, nil
}

// rows sorts the tracked errors for the table and counts them by the
// status the page shows.
func (d *fixData) rows(errs []heal.TrackedError) {
	st := d.State
	counts := map[string]int{}
	for _, e := range errs {
		row := fixErrorRow{TrackedError: e, Shown: string(fix.ShownStatus(e, st.Budget))}
		row.Skipped = hasPrefixIn(e.Fingerprint, st.Skip)
		row.First = !row.Skipped && e.Status != heal.StatusFixed && hasPrefixIn(e.Fingerprint, st.Priority)
		row.Current = st.Pending != nil && st.Pending.Fingerprint == e.Fingerprint
		counts[row.Shown]++
		d.Errors = append(d.Errors, row)
	}
	rank := func(s string) int { return slices.Index(shownStatuses, s) }
	slices.SortStableFunc(d.Errors, func(a, b fixErrorRow) int { return cmp.Compare(rank(a.Shown), rank(b.Shown)) })
	for _, s := range shownStatuses {
		d.Counts = append(d.Counts, statusCount{Status: s, N: counts[s]})
	}
}

// doing says what the loop does now, from the attempt in progress.
func (d *fixData) doing() {
	st := d.State
	p := st.Pending
	switch {
	case !d.Running:
		return
	case p == nil && st.Checks == 0:
		d.Doing = "running the check"
		return
	case p == nil:
		d.Doing = "between steps: checking, or picking the next error"
		return
	}
	name := p.Fingerprint[:min(8, len(p.Fingerprint))]
	for _, e := range d.Errors {
		if e.Fingerprint == p.Fingerprint {
			name = e.Name
		}
	}
	d.Current = name
	if p.AfterTree == "" {
		d.Doing = fmt.Sprintf("attempt %d: the fixer works on %s", p.Attempt, name)
	} else {
		d.Doing = fmt.Sprintf("attempt %d: checking the fixer's edit for %s", p.Attempt, name)
	}
}

func hasPrefixIn(fp string, prefixes []string) bool {
	for _, p := range prefixes {
		if p != "" && strings.HasPrefix(fp, p) {
			return true
		}
	}
	return false
}

// attemptRow reads what an attempt's record names: its patch and the
// tail of its check's output.
func attemptRow(dir string, rec fix.AuditRecord) fixAttemptRow {
	row := fixAttemptRow{AuditRecord: rec}
	if rec.Edit != nil && rec.Edit.Patch != "" {
		row.Patch, row.PatchCut = readPart(dir, rec.Edit.Patch, maxInlinePatch, false)
	}
	if rec.Check != nil && rec.Check.Output != "" {
		row.CheckTail, row.CheckCut = readPart(dir, rec.Check.Output, maxInlineCheck, true)
	}
	return row
}

// readPart reads at most limit bytes of the run's file rel: its head, or
// its tail (a check's summary comes last). cut says what was left out.
func readPart(dir, rel string, limit int64, tail bool) (text, cut string) {
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return "", ""
	}
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return "", err.Error()
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err.Error()
	}
	if fi.Size() > limit {
		cut = fmt.Sprintf("%d of %d bytes shown", limit, fi.Size())
		if tail {
			if _, err := f.Seek(fi.Size()-limit, io.SeekStart); err != nil {
				return "", err.Error()
			}
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return "", err.Error()
	}
	return string(b), cut
}

func (s *Server) fixPage(w http.ResponseWriter, r *http.Request) {
	if !s.fixOn(w) {
		return
	}
	d, err := s.fixData(r.Context(), r.PathValue("id"))
	if err != nil {
		http.Error(w, "no such fix run: "+err.Error(), http.StatusNotFound)
		return
	}
	s.render(w, "fix.html", d)
}

// fixFragments are the parts of a fix run's page pushed live.
var fixFragments = []string{"fix-summary", "fix-errors", "fix-operator", "fix-attempts"}

// fixEvents pushes the page's fragments that changed every Refresh, read
// from the run's files, until the run is no longer at work (then "end").
func (s *Server) fixEvents(w http.ResponseWriter, r *http.Request) {
	if !s.fixOn(w) {
		return
	}
	id := r.PathValue("id")
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	tick := time.NewTicker(s.cfg.Refresh)
	defer tick.Stop()
	last := map[string][]byte{}
	for {
		d, err := s.fixData(r.Context(), id)
		var frags map[string][]byte
		if err == nil {
			frags, err = s.fragments(d, fixFragments...)
		}
		if err != nil {
			frags = map[string][]byte{"error": []byte(err.Error())}
		}
		for _, name := range slices.Sorted(maps.Keys(frags)) {
			if string(frags[name]) == string(last[name]) {
				continue
			}
			if writeEvent(w, name, frags[name]) != nil {
				return
			}
			last[name] = frags[name]
		}
		if rc.Flush() != nil {
			return
		}
		if d != nil && !d.Running {
			writeEvent(w, "end", []byte("the fix run is not running"))
			rc.Flush()
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// fixFileName is what the page links of a run's files: a patch or a
// check's output, by number.
var fixFileName = lazyregexp.New(`^[0-9]{4}\.(patch|log)$`)

// fixFile serves an attempt's whole patch or a check's whole output as
// text.
func (s *Server) fixFile(w http.ResponseWriter, r *http.Request) {
	if !s.fixOn(w) {
		return
	}
	dir, file := r.PathValue("dir"), r.PathValue("file")
	if !(dir == "attempts" && strings.HasSuffix(file, ".patch") || dir == "checks" && strings.HasSuffix(file, ".log")) || !fixFileName().MatchString(file) {
		http.Error(w, "a fix run's files are attempts/NNNN.patch and checks/NNNN.log", http.StatusNotFound)
		return
	}
	store, err := fix.OpenStore(s.cfg.FixHome, r.PathValue("id"))
	if err != nil {
		http.Error(w, "no such fix run: "+err.Error(), http.StatusNotFound)
		return
	}
	b, err := os.ReadFile(filepath.Join(store.Dir, dir, file))
	if err != nil {
		http.Error(w, "no such file in the run", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write(b)
}

// instruct queues the operator's skip, put first or context for the run
// (fix.Store.Instruct): the loop heeds it before its next attempt.
func (s *Server) instruct(w http.ResponseWriter, r *http.Request) {
	if !s.fixOn(w) || !s.formOK(w, r) {
		return
	}
	id := r.PathValue("id")
	store, err := fix.OpenStore(s.cfg.FixHome, id)
	if err != nil {
		http.Error(w, "no such fix run: "+err.Error(), http.StatusNotFound)
		return
	}
	in := fix.Instruction{Kind: r.PostFormValue("kind"), Fingerprint: r.PostFormValue("fingerprint"), Text: r.PostFormValue("text"), By: s.cfg.Operator}
	err = store.Instruct(in)
	var ie *fix.InstructionError
	switch {
	case errors.As(err, &ie):
		http.Error(w, ie.Error(), http.StatusBadRequest)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if r.PostFormValue("via") == "fetch" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, "/fixes/"+url.PathEscape(id), http.StatusSeeOther)
}
