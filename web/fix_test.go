package web

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/fix"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// fixCheck fails Test<X> for every <X>.txt that does not hold "ok", in go
// test's format.
const fixCheck = `#!/bin/sh
fail=0
for f in *.txt; do
  t=${f%.txt}; v=$(cat "$f")
  if [ "$v" != ok ]; then
    printf -- '--- FAIL: Test%s (0.00s)\n    calc_test.go:7: %s() = %s, want ok\n' "$t" "$t" "$v"; fail=1
  fi
done
exit $fail
`

// stubbornFixer fixes every error but TestB's, which it changes to a new
// value of the same error.
type stubbornFixer struct{ dir string }

func (f stubbornFixer) Fix(_ context.Context, req fix.Request) (fix.Answer, error) {
	name := strings.TrimPrefix(req.Error.Name, "Test")
	v := "ok"
	if name == "B" {
		v = "5"
	}
	return fix.Answer{Summary: "wrote " + name + ".txt"}, os.WriteFile(filepath.Join(f.dir, name+".txt"), []byte(v+"\n"), 0o644)
}

// newFixRun runs a fix loop that ends with A fixed, B abandoned (its one
// attempt spent) and C active (the run's two attempts spent), and returns
// the home and the run's id.
func newFixRun(t *testing.T) (home, id string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	files := map[string]string{"check.sh": fixCheck, ".gitignore": ".tenax/\n", "A.txt": "1\n", "B.txt": "2\n", "C.txt": "3\n"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "broken"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	home = filepath.Join(dir, ".tenax")
	res, err := fix.Start(context.Background(), fix.Config{
		Name: "page-test", Workdir: dir, Home: home,
		Check:  fix.Check{Argv: []string{"./check.sh"}, Dir: dir, Parser: fix.ParserGoTest, Timeout: time.Minute},
		Fixer:  stubbornFixer{dir: dir},
		Budget: heal.Budget{MaxErrorAttempts: 1, MaxAttempts: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	return home, res.ID
}

func fixFP(x, v string) string {
	return heal.Fingerprint("Test"+x, "calc_test.go:7: "+x+"() = "+v+", want ok")
}

func serve(s *Server, method, path string, form url.Values, header map[string]string) *httptest.ResponseRecorder {
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req := httptest.NewRequest(method, path, body)
	req.Host = "127.0.0.1:1"
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

func TestFixPageShowsErrorsByStatusAndEachAttempt(t *testing.T) {
	home, id := newFixRun(t)
	s := New(Config{Store: &jsonl.Store{Home: home}, FixHome: home})
	rec := serve(s, http.MethodGet, "/fixes/"+id, nil, nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET the fix page: %d %s", rec.Code, rec.Body)
	}
	page := rec.Body.String()
	for _, c := range []struct{ x, v, status string }{{"A", "1", "fixed"}, {"B", "2", "abandoned"}, {"C", "3", "active"}} {
		want := `data-fingerprint="` + fixFP(c.x, c.v) + `" data-status="` + c.status + `"`
		if !strings.Contains(page, want) {
			t.Errorf("Test%s is not shown as %s (%s)", c.x, c.status, want)
		}
	}
	for _, want := range []string{
		`id="fix-attempts-spent">2 / 2<`,          // both budgets: in all…
		`<td class="num">1 / 1</td>`,              // …and per error
		`id="count-abandoned">1<`,                 // counted by status
		`— <span class="verdict">fixed</span>`,    // attempt 1's verdict
		"&#43;ok",                                 // its patch, escaped
		`href="/fixes/` + id + `/checks/0002.log`, // its check's output
		"calc_test.go:7: B() = 5, want ok",        // the tail of the check after attempt 2
		`value="skip"`, `value="prioritize"`, `name="kind" value="context"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the fix page lacks %q", want)
		}
	}
	// No lever on a fixed error.
	row := regexp.MustCompile(`(?s)<tr data-fingerprint="` + fixFP("A", "1") + `".*?</tr>`).FindString(page)
	if strings.Contains(row, "<button") {
		t.Errorf("the fixed error's row offers levers:\n%s", row)
	}
}

func TestFixLeversRefuseForgedRequestsAndQueueTheOperatorsWord(t *testing.T) {
	home, id := newFixRun(t)
	s := New(Config{Store: &jsonl.Store{Home: home}, FixHome: home, Operator: "the test page"})
	good := url.Values{"csrf": {s.csrf}, "kind": {"skip"}, "fingerprint": {fixFP("C", "3")}}
	with := func(k, v string) url.Values {
		f := url.Values{}
		for kk, vv := range good {
			f[kk] = vv
		}
		f.Set(k, v)
		return f
	}
	for _, c := range []struct {
		name   string
		method string
		form   url.Values
		header map[string]string
		want   int
	}{
		{"a GET cannot instruct", http.MethodGet, good, nil, http.StatusMethodNotAllowed},
		{"another site's form (Sec-Fetch-Site)", http.MethodPost, good, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"another site's form (Origin)", http.MethodPost, good, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"no form secret", http.MethodPost, with("csrf", ""), nil, http.StatusForbidden},
		{"a wrong form secret", http.MethodPost, with("csrf", "0000"), nil, http.StatusForbidden},
		{"an unknown lever", http.MethodPost, with("kind", "delete"), nil, http.StatusBadRequest},
		{"an error the run lacks", http.MethodPost, with("fingerprint", "0123abcd"), nil, http.StatusBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := serve(s, c.method, "/fixes/"+id+"/instruct", c.form, c.header)
			if rec.Code != c.want {
				t.Errorf("%d %s, want %d", rec.Code, strings.TrimSpace(rec.Body.String()), c.want)
			}
		})
	}
	store, err := fix.OpenStore(home, id)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := store.Load()
	if q, _ := store.Queued(st); len(q) != 0 {
		t.Fatalf("refused requests queued %v", q)
	}

	// The page's own form, from the same origin, queues the skip.
	rec := serve(s, http.MethodPost, "/fixes/"+id+"/instruct", good, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:1"})
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("the page's form: %d %s, want 303", rec.Code, rec.Body)
	}
	q, err := store.Queued(st)
	if err != nil || len(q) != 1 || q[0].Kind != fix.InstructSkip || q[0].Fingerprint != fixFP("C", "3") || q[0].By != "the test page" {
		t.Fatalf("queued %+v (%v); want the skip of TestC by the test page", q, err)
	}
	// A prefix of 4, as the CLI takes them, shows too.
	if err := store.Instruct(fix.Instruction{Kind: fix.InstructPrioritize, Fingerprint: fixFP("B", "2")[:4]}); err != nil {
		t.Fatal(err)
	}
	rec = serve(s, http.MethodGet, "/fixes/"+id, nil, nil)
	page := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.Contains(page, "waiting for the next attempt: <b>prioritize</b> "+fixFP("B", "2")[:4]+" ") {
		t.Errorf("the page with a queued prefix: %d\n%s", rec.Code, page)
	}
	if !strings.Contains(page, "waiting for the next attempt: <b>skip</b> "+fixFP("C", "3")[:8]) {
		t.Errorf("the page does not show the queued skip")
	}
	if !strings.Contains(page, "applies when the run resumes: tenax fix --resume "+id) {
		t.Errorf("the page of a stopped run does not say its levers wait for a resume")
	}
}

func TestFixRunsAreListedBesideTheJobs(t *testing.T) {
	home, id := newFixRun(t)
	s := New(Config{Store: &jsonl.Store{Home: home}, FixHome: home})
	for _, path := range []string{"/", "/fixes"} {
		rec := serve(s, http.MethodGet, path, nil, nil)
		if !strings.Contains(rec.Body.String(), `<a href="/fixes/`+id+`">`+id+`</a>`) || !strings.Contains(rec.Body.String(), "1 of 3") {
			t.Errorf("GET %s does not list the fix run with its errors fixed:\n%s", path, rec.Body)
		}
	}
	// tenax ui FIX_RUN: "/" is the run's page.
	s = New(Config{Store: &jsonl.Store{Home: home}, FixHome: home, Fix: id})
	if rec := serve(s, http.MethodGet, "/", nil, nil); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/fixes/"+id {
		t.Errorf("GET / of a server for one fix run: %d to %q; want 303 to /fixes/%s", rec.Code, rec.Header().Get("Location"), id)
	}
	// Without FixHome there are no fix pages.
	s = New(Config{Store: &jsonl.Store{Home: home}})
	if rec := serve(s, http.MethodGet, "/fixes/"+id, nil, nil); rec.Code != http.StatusNotFound {
		t.Errorf("a fix page without FixHome: %d, want 404", rec.Code)
	}
}

func TestFixFilesServeOnlyPatchesAndCheckOutputs(t *testing.T) {
	home, id := newFixRun(t)
	s := New(Config{Store: &jsonl.Store{Home: home}, FixHome: home})
	for _, c := range []struct {
		path string
		want int
		body string
	}{
		{"/fixes/" + id + "/attempts/0001.patch", http.StatusOK, "+ok"},
		{"/fixes/" + id + "/checks/0001.log", http.StatusOK, "--- FAIL: TestA"},
		{"/fixes/" + id + "/checks/0001.patch", http.StatusNotFound, ""},
		{"/fixes/" + id + "/x/state.json", http.StatusNotFound, ""},
		{"/fixes/" + id + "/attempts/..%2fstate.json", http.StatusNotFound, ""},
		{"/fixes/fix_none/checks/0001.log", http.StatusNotFound, ""},
	} {
		rec := serve(s, http.MethodGet, c.path, nil, nil)
		if rec.Code != c.want || !strings.Contains(rec.Body.String(), c.body) {
			t.Errorf("GET %s: %d %q; want %d with %q", c.path, rec.Code, rec.Body, c.want, c.body)
		}
		if c.want == http.StatusOK && rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q; want plain text", c.path, rec.Header().Get("Content-Type"))
		}
	}
}

func TestFixEventsEndOnceTheRunIsNotRunning(t *testing.T) {
	home, id := newFixRun(t)
	srv := httptest.NewServer(New(Config{Store: &jsonl.Store{Home: home}, FixHome: home, Refresh: time.Hour}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/fixes/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := &sseReader{bufio.NewScanner(resp.Body)}
	seen := map[string]string{}
	for {
		ev, data, err := r.next()
		if err != nil {
			t.Fatalf("the stream ended (%v) before its end event; seen %v", err, seen)
		}
		seen[ev] = data
		if ev == "end" {
			break
		}
	}
	for _, name := range fixFragments {
		if seen[name] == "" {
			t.Errorf("the stream sent no %s before it ended", name)
		}
	}
	if !strings.Contains(seen["fix-summary"], `id="fix-outcome">failed<`) {
		t.Errorf("the summary does not show the run failed:\n%s", seen["fix-summary"])
	}
}
