package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/report"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker/workertype"
)

// Retry is which failures a re-run from the page takes: those of these
// classes, fingerprints (a prefix, as status shows it) and routes, every
// failure when all are empty. It is `tenax resume JOB
// --retry-failures[=CLASS,…] [--fingerprint FP] [--route NAME]`, which
// also runs the items still pending.
type Retry struct {
	Classes      []classify.Class
	Fingerprints []string
	Routes       []string
}

// Command is the CLI command that does what r does to job id.
func (r Retry) Command(id string) string {
	cmd := "tenax resume " + id
	if len(r.Fingerprints) > 0 || len(r.Routes) > 0 {
		for _, fp := range r.Fingerprints {
			cmd += " --fingerprint " + fp
		}
		for _, name := range r.Routes {
			cmd += " --route " + name
		}
		if len(r.Classes) == 0 {
			return cmd
		}
	}
	if len(r.Classes) == 0 {
		return cmd + " --retry-failures"
	}
	names := make([]string, len(r.Classes))
	for i, c := range r.Classes {
		names[i] = c.String()
	}
	return cmd + " --retry-failures=" + strings.Join(names, ",")
}

// filter is the item list's filter that shows the failures r re-runs.
func (r Retry) filter() itemFilter {
	f := itemFilter{Outcome: "failed", Page: 1}
	if len(r.Classes) == 1 {
		f.Class = r.Classes[0].String()
	}
	if len(r.Fingerprints) == 1 {
		f.Fingerprint = r.Fingerprints[0]
	}
	if len(r.Routes) == 1 {
		f.Route = r.Routes[0]
	}
	return f
}

// query is r as the retry form's query string.
func (r Retry) query() string {
	v := url.Values{}
	for _, c := range r.Classes {
		v.Add("class", c.String())
	}
	for _, fp := range r.Fingerprints {
		v.Add("fingerprint", fp)
	}
	for _, name := range r.Routes {
		v.Add("route", name)
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// parseRetry reads a Retry from a query or a form.
func parseRetry(v url.Values) (Retry, error) {
	var r Retry
	for _, name := range v["class"] {
		if name == "" {
			continue
		}
		c, err := classify.ParseClass(name)
		if err != nil || c == classify.Unknown || c == classify.Canceled {
			return r, fmt.Errorf("%q is not a failure class; want retryable, fatal, item or invalid", name)
		}
		r.Classes = append(r.Classes, c)
	}
	for _, fp := range v["fingerprint"] {
		if fp = strings.TrimSpace(fp); fp != "" {
			r.Fingerprints = append(r.Fingerprints, fp)
		}
	}
	for _, name := range v["route"] {
		if name = strings.TrimSpace(name); name != "" {
			r.Routes = append(r.Routes, name)
		}
	}
	return r, nil
}

// retryFor is the Retry that re-runs the failures the filter f shows; false
// when no resume takes exactly those (a text search, succeeded items).
func retryFor(f itemFilter) (Retry, bool) {
	if f.Text != "" || f.Outcome != "" && f.Outcome != "failed" {
		return Retry{}, false
	}
	v := url.Values{}
	v.Set("class", f.Class)
	v.Set("fingerprint", f.Fingerprint)
	v.Set("route", f.Route)
	r, err := parseRetry(v)
	return r, err == nil
}

// Resumer re-runs a job's failures as `tenax resume` does with r, and
// returns when that run ends, with a line that says how the job stands.
// The CLI's tenax ui gives one that calls job.Resume.
type Resumer func(ctx context.Context, id string, r Retry) (summary string, err error)

// retryAbility says whether the page may re-run a job's failures now.
type retryAbility struct {
	OK  bool
	Why string // why not
	// Workers says the job's workers re-run it: every failure at once
	// (a new round of its River queue), as tenax resume --retry-failures
	// --workers 0 does; no class or fingerprint narrows it.
	Workers bool
}

// retryRun is a re-run started from the page.
type retryRun struct {
	Command string
	Started time.Time
	Ended   time.Time
	Summary string
	Err     string
}

// retries are the re-runs this server started, the latest per job.
type retries struct {
	mu   sync.Mutex
	runs map[string]*retryRun
}

func (rs *retries) get(id string) *retryRun {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r := rs.runs[id]; r != nil {
		c := *r
		return &c
	}
	return nil
}

// start records a re-run of job id by command, false when one is still
// running.
func (rs *retries) start(id, command string) (*retryRun, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if cur := rs.runs[id]; cur != nil && cur.Ended.IsZero() {
		return nil, false
	}
	if rs.runs == nil {
		rs.runs = map[string]*retryRun{}
	}
	run := &retryRun{Command: command, Started: time.Now()}
	rs.runs[id] = run
	return run, true
}

func (rs *retries) end(run *retryRun, summary string, err error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	run.Ended, run.Summary = time.Now(), summary
	if err != nil {
		run.Err = err.Error()
	}
}

// retryAbility says whether job id's failures can be re-run from this page:
// a job of workers that they are not running (they re-run every failure),
// or, with a Resumer, a job that has stopped (or is stale: its run was
// killed) and that this process is not running.
func (s *Server) retryAbility(ctx context.Context, id string) retryAbility {
	if r := s.retries.get(id); r != nil && r.Ended.IsZero() {
		return retryAbility{Why: "a re-run started from this page is under way"}
	}
	if s.workersOf(ctx, id) != nil {
		if v, err := s.reports.get(ctx, id); err == nil && v != nil && v.Report != nil && v.Report.Manifest.State == store.StateRunning {
			return retryAbility{Why: "its workers are running the job"}
		}
		return retryAbility{OK: true, Workers: true}
	}
	switch {
	case s.cfg.Resume == nil:
		return retryAbility{Why: "this page cannot re-run items while a run serves it; when it has ended, tenax ui " + id + " can"}
	case s.live(id) != nil && !s.live(id).Ended():
		return retryAbility{Why: "the job is running in this process"}
	}
	v, err := s.reports.get(ctx, id)
	if err != nil || v == nil || v.Report == nil {
		return retryAbility{Why: "the job cannot be read"}
	}
	if st, _ := report.CurrentState(ctx, s.cfg.Store, v.Report.Manifest, ""); st == store.StateRunning {
		return retryAbility{Why: "the job is running"}
	}
	return retryAbility{OK: true}
}

// retryPlan says whether r can re-run job id's failures now, and the
// command that does the same.
func (s *Server) retryPlan(ctx context.Context, id string, r Retry) (retryAbility, string) {
	a := s.retryAbility(ctx, id)
	if !a.Workers {
		return a, r.Command(id)
	}
	if len(r.Classes) > 0 || len(r.Fingerprints) > 0 || len(r.Routes) > 0 {
		a = retryAbility{Why: "the workers of a job re-run every failure together: retry them all from the job's page"}
	}
	return a, r.Command(id) + " --workers 0"
}

// retryData is what the confirmation page renders.
type retryData struct {
	ID      string
	Retry   Retry
	Command string
	Query   string
	// List is the item list's query that shows these failures.
	List    string
	Items   *itemsPage
	Ability retryAbility
	CSRF    string
}

// retryConfirm shows what a re-run would take, with the button that starts
// it: nothing is re-run by following a link.
func (s *Server) retryConfirm(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rt, err := parseRetry(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	items, err := listItems(r.Context(), s.cfg.Store, id, rt.filter())
	if err != nil {
		notFound(w, err)
		return
	}
	ability, command := s.retryPlan(r.Context(), id, rt)
	s.render(w, "retry.html", &retryData{ID: id, Retry: rt, Command: command, Query: rt.query(), List: rt.filter().query(1), Items: items,
		Ability: ability, CSRF: s.formSecret(r.Context())})
}

// retry starts the re-run the confirmation page's form asks for, in the
// background, and goes back to the job's page, which shows it.
func (s *Server) retry(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.formOK(w, r) {
		return
	}
	if r.PostFormValue("confirm") != "yes" {
		http.Error(w, "a re-run needs its confirmation (the button of the confirmation page)", http.StatusBadRequest)
		return
	}
	rt, err := parseRetry(r.PostForm)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a, command := s.retryPlan(r.Context(), id, rt)
	if !a.OK {
		http.Error(w, "cannot re-run job "+id+" now: "+a.Why, http.StatusConflict)
		return
	}
	run, ok := s.retries.start(id, command)
	if !ok {
		http.Error(w, "a re-run of job "+id+" started from this page is under way", http.StatusConflict)
		return
	}
	if a.Workers {
		// A new round of the job's River queue: whichever workers serve
		// it run the items, as after tenax resume --workers 0.
		e, err := s.cfg.Workers.Requeue(r.Context(), id, workertype.RequeueOptions{RetryFailures: true})
		s.retries.end(run, fmt.Sprintf("%d items enqueued again (round %d) for the job's workers", e.Items, e.Round), err)
		s.reports.forget(id)
		http.Redirect(w, r, "/jobs/"+url.PathEscape(id), http.StatusSeeOther)
		return
	}
	go func() {
		summary, err := s.cfg.Resume(context.WithoutCancel(r.Context()), id, rt)
		s.retries.end(run, summary, err)
		s.reports.forget(id)
	}()
	http.Redirect(w, r, "/jobs/"+url.PathEscape(id), http.StatusSeeOther)
}
