package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	// html/template without method calls, so that the linker can drop
	// the methods nothing calls (task.Template says why); the pages
	// render plain data, and a method named in a page fails its tests.
	template "github.com/DataDog/datadog-agent/pkg/template/html"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/metrics"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker/workertype"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Config is what a Server shows.
type Config struct {
	// Store is where jobs are read. Every page reads it through
	// store.Store, so the view works for any store and for jobs worked by
	// many processes. Nil serves /metrics only.
	Store store.Store
	// Job is the job "/" shows; "" lists the store's jobs.
	Job string
	// Monitor is the live run of Job in this process, nil when watching
	// from the store only (tenax ui). It adds the rate, in flight, the
	// breaker, cooldowns, item timelines and the Continue / Abort buttons.
	Monitor *Monitor
	// Workers is the workers' database of a PostgreSQL store, nil for
	// none: the page of a job that workers run shows its River queue,
	// shared breaker and budget and the workers running it, and answers
	// the breaker (Continue / Abort), as `tenax breaker` does.
	Workers Workers
	// Operator is who answers from this page, as the workers' logs and a
	// terminal that attends the job are told (default "the web page").
	Operator string
	// Metrics is served at /metrics; nil serves none.
	Metrics prometheus.Gatherer
	// Token, when set, is required of every request: as ?token= (which
	// sets a cookie), the cookie, or an Authorization: Bearer header.
	// Without one (nor a ViewToken), only requests naming a loopback host
	// are served, so that another site cannot reach the page through DNS
	// rebinding. It is the operator's token: its requests may act.
	Token string
	// ViewToken, when set, is a second token, taken as Token is, whose
	// requests see every page, chart and download and change nothing
	// (Viewer): their POSTs are refused (403) and the pages show them no
	// button nor form.
	ViewToken string
	// Refresh is how often pages are pushed without news (default 1s).
	Refresh time.Duration
	// FixHome is the tenax home whose fix runs are listed beside the jobs
	// and shown at /fixes/ID, with their levers (see fix.go); "" for none.
	FixHome string
	// Fix is the fix run "/" shows, in FixHome.
	Fix string
	// Resume, when set, lets the page re-run a stopped job's failures
	// (retry this group, retry these failures) as tenax resume does; nil
	// offers no re-run.
	Resume Resumer
}

// Workers is what the page reads and answers of a workers' database:
// *worker.Client is one, which cmd/tenax hands it. The page declares only
// what it calls, so that it links no River nor pgx.
type Workers interface {
	// Progress reads where a job run by workers stands, or
	// workertype.ErrNotQueued for a job one process runs.
	Progress(ctx context.Context, jobID string) (workertype.Progress, error)
	// Workers lists every worker that has run on the database.
	Workers(ctx context.Context) ([]workertype.Info, error)
	// DecideTrip answers trip trip of the job's open shared breaker, as
	// by: the first answer wins (workertype.AnsweredError,
	// ErrTripSettled, ErrBreakerClosed say why one came too late).
	DecideTrip(ctx context.Context, jobID string, trip int, d workertype.Decision, by string) error
	// Requeue enqueues the job's items again, in a new round, as
	// `tenax resume` does for a job run by workers.
	Requeue(ctx context.Context, jobID string, opts workertype.RequeueOptions) (workertype.Enqueued, error)
	// Stop stops a job run by workers as an operator's abort: every
	// worker finishes and records its calls in flight, the items left
	// stay pending for `tenax resume`; workertype.ErrNotQueued for a job
	// one process runs.
	Stop(ctx context.Context, jobID, detail string) error
	// Pause holds a job run by workers for the operator by: no worker
	// starts a call of it until Continue; a *workertype.PausedError when
	// it is paused already, workertype.ErrStopping when it is stopping.
	Pause(ctx context.Context, jobID, by string) error
	// Continue ends the operator's pause of a job run by workers;
	// workertype.ErrNotPaused when none holds it.
	Continue(ctx context.Context, jobID, by string) error
}

// Server is the live view and /metrics as an http.Handler.
type Server struct {
	cfg     Config
	mux     *http.ServeMux
	pages   *template.Template
	reports *reports
	retries retries
	// csrf is a per-server secret every form carries: a cross-site page
	// cannot read it, so it cannot forge a form.
	csrf string
}

const tokenCookie = "tenax_token"

// New returns a Server for cfg.
func New(cfg Config) *Server {
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Second
	}
	if cfg.Operator == "" {
		cfg.Operator = "the web page"
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), reports: &reports{store: cfg.Store}, csrf: NewToken()}
	s.pages = template.Must(template.New("").Funcs(funcs).ParseFS(assets, "templates/*.html"))
	static, _ := fs.Sub(assets, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	// Every browser asks for /favicon.ico on every page: a 404 there
	// was a console error on each of them.
	s.mux.HandleFunc("GET /favicon.ico", serveFavicon)
	if cfg.Metrics != nil {
		s.mux.Handle("GET /metrics", metrics.Handler(cfg.Metrics))
	}
	if cfg.Store == nil {
		s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintln(w, "tenax: Prometheus metrics are at /metrics")
		})
		return s
	}
	s.mux.HandleFunc("GET /{$}", s.home)
	s.mux.HandleFunc("GET /events", s.jobsEvents)
	s.mux.HandleFunc("GET /jobs/{id}", s.jobPage)
	s.mux.HandleFunc("GET /jobs/{id}/events", s.jobEvents)
	s.mux.HandleFunc("GET /jobs/{id}/items/{idx}", s.itemPage)
	s.mux.HandleFunc("GET /jobs/{id}/items/{idx}/events", s.itemEvents)
	s.mux.HandleFunc("GET /jobs/{id}/breaker", s.inspectPage)
	s.mux.HandleFunc("GET /jobs/{id}/items", s.itemsPage)
	s.mux.HandleFunc("GET /jobs/{id}/retry", s.retryConfirm)
	s.mux.HandleFunc("GET /jobs/{id}/charts/{file}", s.chartCSV)
	// Actions: POST only, refused when a browser says they come from
	// another site (Sec-Fetch-Site, Origin), and carrying the form secret.
	cop := http.NewCrossOriginProtection()
	s.mux.Handle("POST /jobs/{id}/answer", cop.Handler(http.HandlerFunc(s.answer)))
	s.mux.Handle("POST /jobs/{id}/decide", cop.Handler(http.HandlerFunc(s.decide)))
	s.mux.Handle("POST /jobs/{id}/control", cop.Handler(http.HandlerFunc(s.control)))
	s.fixRoutes(cop)
	s.mux.Handle("POST /jobs/{id}/retry", cop.Handler(http.HandlerFunc(s.retry)))
	return s
}

// ServeHTTP checks the token (or, without one, that the request names a
// loopback host) and serves the request in the role its token gives.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if s.cfg.Token == "" && s.cfg.ViewToken == "" {
		if !loopbackHost(r.Host) {
			http.Error(w, "tenax serves this page to loopback addresses only; start it with a token to serve it elsewhere", http.StatusForbidden)
			return
		}
		s.serveAs(w, r, Operator)
		return
	}
	if q := r.URL.Query().Get("token"); q != "" {
		role, ok := s.roleOf(q)
		if !ok {
			http.Error(w, "wrong token", http.StatusUnauthorized)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		if r.Method == http.MethodGet && !strings.HasSuffix(r.URL.Path, "/events") && r.URL.Path != "/metrics" {
			// Take the token out of the address bar and the history.
			u := *r.URL
			qs := u.Query()
			qs.Del("token")
			u.RawQuery = qs.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		s.serveAs(w, r, role)
		return
	}
	// A bearer token wins over the cookie: a proxy that authenticates
	// the team sends it whatever cookie a browser holds.
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if role, ok := s.roleOf(b); ok {
			s.serveAs(w, r, role)
			return
		}
	}
	if c, err := r.Cookie(tokenCookie); err == nil {
		if role, ok := s.roleOf(c.Value); ok {
			s.serveAs(w, r, role)
			return
		}
	}
	http.Error(w, "this page needs the token tenax printed when it started: open the URL it printed (…?token=…)", http.StatusUnauthorized)
}

// loopbackHost reports whether a Host header names this machine's loopback
// interface: localhost, 127.0.0.0/8 or ::1.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// NewToken returns a random token of 128 bits, hex-encoded.
func NewToken() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	if s.fixHome(w, r) {
		return
	}
	id := s.cfg.Job
	if id == "" && s.cfg.Monitor != nil {
		id = s.cfg.Monitor.JobID()
	}
	if id != "" {
		http.Redirect(w, r, "/jobs/"+url.PathEscape(id), http.StatusSeeOther)
		return
	}
	s.jobsPage(w, r)
}

// live returns the monitor when it watches job id.
func (s *Server) live(id string) *Monitor {
	if s.cfg.Monitor != nil && s.cfg.Monitor.JobID() == id {
		return s.cfg.Monitor
	}
	return nil
}

// jobData is what the job page renders.
type jobData struct {
	ID     string
	View   *jobView
	Err    string
	Live   *Live
	CSRF   string
	Now    time.Time
	Groups []groupData
	// Workers is set for a job run by workers.
	Workers *workersData
	// Retry is the latest re-run started from this page, nil for none.
	Retry *retryRun
	// CanRetry says whether the page may re-run the job's failures.
	CanRetry retryAbility
	// Charts are the view's charts, the in-flight chart's limit that of
	// the job's live workers when it runs on workers.
	Charts []chart
	// ZoomQuery is the query string of the time range the charts are
	// zoomed into ("" for the whole job), which the page's links and
	// event stream keep; ZoomLabel says it in words.
	ZoomQuery, ZoomLabel string
	// TripsAllRuns counts the breaker's trips over every run of the job:
	// the manifest's count of the runs that ended, and this run's while
	// it is live (its trips reach the manifest only when it ends).
	TripsAllRuns int
	// Routes is the routes panel (routePanel): the live run's routes with
	// what the records say of each, or the records' alone; nil for a job
	// without routes.
	Routes []RouteRow
	// Stored is the run of another process (tenax run in another
	// terminal, this page a tenax ui over the same store), with its
	// levers; nil when this process runs the job, workers do, or none.
	Stored *storedRun
}

type groupData struct {
	Fingerprint, Class, Normalized, Example string
	Count                                   int
	Samples                                 []int
	Hints                                   []string
}

func (s *Server) jobData(ctx context.Context, id string, zoom timeWindow) (*jobData, error) {
	d := &jobData{ID: id, CSRF: s.formSecret(ctx), Now: time.Now(), ZoomQuery: zoom.query(), ZoomLabel: zoom.label()}
	v, err := s.reports.getIn(ctx, id, zoom)
	if errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if err != nil {
		d.Err = err.Error()
	}
	d.View = v
	d.Workers = s.workersOf(ctx, id)
	d.Retry = s.retries.get(id)
	d.CanRetry = s.retryAbility(ctx, id)
	if m := s.live(id); m != nil {
		l := m.Live(d.Now)
		d.Live = &l
	}
	if d.Workers == nil && (d.Live == nil || d.Live.Ended || !d.Live.CanControl) {
		sr, err := s.storedControl(ctx, id)
		if err != nil && d.Err == "" {
			d.Err = "reading the job's control requests: " + err.Error()
		}
		d.Stored = sr
	}
	var live []engine.RouteStats
	if d.Live != nil {
		live = d.Live.Stats.Routes
	}
	var recorded []RouteRow
	if v != nil {
		recorded = v.Routes
	}
	d.Routes = routePanel(live, recorded)
	if v != nil && v.Report != nil {
		d.Charts = withWorkersLimit(v.Charts, d.Workers, specConcurrency(v.Report.Manifest.Spec))
		d.TripsAllRuns = v.Report.Manifest.BreakerTrips
		if d.Live != nil && !d.Live.Ended && v.Report.Manifest.State == store.StateRunning {
			d.TripsAllRuns += d.Live.Stats.Trips
		}
	}
	if v != nil && v.Report != nil {
		for i, g := range v.Report.Groups {
			if i == 20 {
				break
			}
			gd := groupData{Fingerprint: g.Fingerprint, Class: g.Class.String(), Normalized: g.Normalized,
				Example: g.Example, Count: g.Count, Samples: v.Samples[g.Fingerprint], Hints: g.Hints}
			d.Groups = append(d.Groups, gd)
		}
	}
	return d, nil
}

func (s *Server) jobPage(w http.ResponseWriter, r *http.Request) {
	zoom, err := parseZoom(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	d, err := s.jobData(r.Context(), r.PathValue("id"), zoom)
	if err != nil {
		notFound(w, err)
		return
	}
	s.render(w, "job.html", d)
}

func (s *Server) jobEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	zoom, err := parseZoom(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.stream(w, r, id, func(ctx context.Context) (map[string][]byte, error) {
		d, err := s.jobData(ctx, id, zoom)
		if err != nil {
			return nil, err
		}
		// The levers have a fragment of their own, which changes only
		// with the run's state: a button inside the live counters,
		// replaced several times a second, could be lost mid-click.
		return s.fragments(d, "title", "live", "question", "workers", "controls")
	})
}

type itemData struct {
	ID       string
	Idx      int
	Timeline *Timeline
	// Record is the item's latest record, nil while it is pending.
	Record *store.Record
	// History is every record of the item, oldest first (the latest
	// maxHistory, HistoryDropped older ones left out); nil from a store
	// that keeps no history, which shows Record alone.
	History        []historyEntry
	HistoryDropped int
	// Transcript is an agent item's steps (the latest record's
	// transcript, or the latest one while the item has no record); nil
	// for other items.
	Transcript *transcriptData
	Err        string
	Live       bool
}

func (s *Server) itemData(ctx context.Context, id string, idx int) *itemData {
	d := &itemData{ID: id, Idx: idx}
	m := s.live(id)
	if m != nil {
		d.Live = true
		if t, ok := m.Timeline(idx); ok {
			d.Timeline = &t
		}
	}
	h, dropped, ok, err := itemHistory(ctx, s.cfg.Store, id, idx)
	if err == nil && !ok {
		var rec store.Record
		if rec, ok, err = findRecord(ctx, s.cfg.Store, id, idx); ok {
			h = []historyEntry{{N: 1, Latest: true, Rec: rec}}
		}
	}
	if err != nil {
		d.Err = err.Error()
		return d
	}
	for i := range h {
		if m != nil {
			// Records are redacted as they are written; the run's own
			// secrets are taken out again, as from its events.
			h[i].Rec.Error, h[i].Rec.Stderr = m.text(h[i].Rec.Error), m.text(h[i].Rec.Stderr)
		}
	}
	if len(h) > 0 {
		d.Record = &h[len(h)-1].Rec
		d.History, d.HistoryDropped = h, dropped
	}
	if d.Record == nil || d.Record.Agent != nil {
		n := 0
		if d.Record != nil && d.Record.Agent.Transcript != nil {
			n = d.Record.Agent.Transcript.N
		}
		if d.Transcript = itemTranscript(ctx, s.cfg.Store, id, idx, n); d.Transcript != nil && m != nil {
			d.Transcript.redact(m.text)
		}
	}
	return d
}

func (s *Server) itemPage(w http.ResponseWriter, r *http.Request) {
	idx, err := strconv.Atoi(r.PathValue("idx"))
	if err != nil || idx < 0 {
		http.Error(w, "an item is named by its index (a number from 0)", http.StatusBadRequest)
		return
	}
	s.render(w, "item.html", s.itemData(r.Context(), r.PathValue("id"), idx))
}

func (s *Server) itemEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	idx, err := strconv.Atoi(r.PathValue("idx"))
	if err != nil || idx < 0 {
		http.Error(w, "an item is named by its index (a number from 0)", http.StatusBadRequest)
		return
	}
	s.stream(w, r, id, func(ctx context.Context) (map[string][]byte, error) {
		return s.fragments(s.itemData(ctx, id, idx), "timeline")
	})
}

// itemsPage lists the job's items from the store, filtered and a page at a
// time.
func (s *Server) itemsPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f := parseItemFilter(r.URL.Query())
	p, err := listItems(r.Context(), s.cfg.Store, id, f)
	if err != nil {
		notFound(w, err)
		return
	}
	p.CSRF = s.formSecret(r.Context())
	if rt, ok := retryFor(f); ok && p.Failed > 0 {
		p.Retry, p.RetryCommand = s.retryPlan(r.Context(), id, rt)
		p.RetryQuery = rt.query()
	}
	s.render(w, "items.html", p)
}

func (s *Server) inspectPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var q *Question
	if m := s.live(id); m != nil {
		q = m.Prompter.Pending()
	}
	s.render(w, "inspect.html", map[string]any{"ID": id, "Question": q, "CSRF": s.formSecret(r.Context())})
}

// answer takes Continue or Abort for the pending question.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.formOK(w, r) {
		return
	}
	m := s.live(id)
	if m == nil {
		http.Error(w, "job "+id+" is not running in this process", http.StatusConflict)
		return
	}
	q, err := strconv.ParseUint(r.PostFormValue("question"), 10, 64)
	if err != nil {
		http.Error(w, "which question? (the form has no question id)", http.StatusBadRequest)
		return
	}
	var goOn bool
	switch r.PostFormValue("answer") {
	case "continue":
		goOn = true
	case "abort":
	default:
		http.Error(w, "answer continue or abort", http.StatusBadRequest)
		return
	}
	if err := m.Prompter.Answer(q, goOn); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	answered(w, r, id)
}

// answered ends a request that answered job id: the page's script, which
// posts without leaving the page (via=fetch), needs no body; a form
// posted without it goes back to the job's page.
func answered(w http.ResponseWriter, r *http.Request, id string) {
	if r.PostFormValue("via") == "fetch" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, "/jobs/"+url.PathEscape(id), http.StatusSeeOther)
}

// formOK checks that a form carries this server's secret, refusing it
// otherwise: a page of another site cannot read the secret to forge it.
func (s *Server) formOK(w http.ResponseWriter, r *http.Request) bool {
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrf)) != 1 {
		http.Error(w, "this form is not from this page (reload the page and answer again)", http.StatusForbidden)
		return false
	}
	return true
}

// stream sends each fragment render returns as a Server-Sent Event named
// after it (the page replaces the element of that id): all of them at once,
// then those that changed whenever the live run changes (at most four times
// a second) or every Refresh, until the client leaves.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, id string, render func(context.Context) (map[string][]byte, error)) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	// A reverse proxy (nginx) would buffer the stream: ask it not to.
	w.Header().Set("X-Accel-Buffering", "no")
	ctx := r.Context()
	var changed <-chan struct{}
	m := s.live(id)
	if m != nil {
		ch, stop := m.Subscribe()
		defer stop()
		changed = ch
	}
	tick := time.NewTicker(s.cfg.Refresh)
	defer tick.Stop()
	last := map[string][]byte{}
	for {
		ended := m != nil && m.Ended()
		if ended {
			// The last render must read the job as the run left it (its
			// state, its trips), not a view cached while it ran: no
			// render follows it.
			s.reports.forget(id)
		}
		frags, err := render(ctx)
		if err != nil {
			frags = map[string][]byte{"error": []byte(template.HTMLEscapeString(err.Error()))}
		}
		for _, name := range slices.Sorted(maps.Keys(frags)) {
			if bytes.Equal(frags[name], last[name]) {
				continue
			}
			if err := writeEvent(w, name, frags[name]); err != nil {
				return
			}
			last[name] = frags[name]
		}
		if err := rc.Flush(); err != nil {
			return
		}
		if ended {
			// The run is over and the page has its last state.
			// The page goes when the run's process exits: say where
			// it lives on.
			writeEvent(w, "end", []byte("the run has ended; tenax ui "+id+" serves this page again from the job's records"))
			rc.Flush()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
		}
		// Coalesce bursts of events into one update.
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// writeEvent writes one SSE event; every line of data gets its own data:
// field, so that a fragment's newlines survive.
func writeEvent(w http.ResponseWriter, event string, data []byte) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "event: %s\n", event)
	for _, line := range bytes.Split(data, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(bytes.TrimSuffix(line, []byte("\r")))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

func (s *Server) fragment(name string, data any) ([]byte, error) {
	var b bytes.Buffer
	if err := s.pages.ExecuteTemplate(&b, name, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// fragments renders the named templates with data.
func (s *Server) fragments(data any, names ...string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(names))
	for _, n := range names {
		b, err := s.fragment(n, data)
		if err != nil {
			return nil, err
		}
		out[n] = b
	}
	return out, nil
}

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	b, err := s.fragment(name, data)
	if err != nil {
		http.Error(w, "rendering the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'")
	w.Write(b)
}

func notFound(w http.ResponseWriter, err error) {
	http.Error(w, "no such job: "+err.Error(), http.StatusNotFound)
}

// serveFavicon answers a browser's /favicon.ico with tenax's icon
// (static/favicon.svg; browsers take an SVG icon by its content type).
func serveFavicon(w http.ResponseWriter, _ *http.Request) {
	b, err := assets.ReadFile("static/favicon.svg")
	if err != nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "max-age=86400")
	_, _ = w.Write(b)
}
