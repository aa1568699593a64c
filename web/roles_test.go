package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// A team's read-only view token sees every page and chart and changes
// nothing: each action's POST is refused with a message saying why, and
// the pages carry no form secret, hence no form; the operator's token
// (today's single token) still acts.
func TestTheViewTokenSeesEverythingAndCannotAct(t *testing.T) {
	st, id := newJob(t, 10)
	s := New(Config{Store: st, Token: "op-token", ViewToken: "view-token", FixHome: t.TempDir(), Resume: (&fakeResumer{}).resume})
	do := func(method, path, token string, form url.Values) *httptest.ResponseRecorder {
		var body *strings.Reader
		if form == nil {
			body = strings.NewReader("")
		} else {
			body = strings.NewReader(form.Encode())
		}
		req := httptest.NewRequest(method, "http://tenax.example.com"+path, body)
		req.Header.Set("Authorization", "Bearer "+token)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	form := url.Values{"csrf": {s.csrf}, "confirm": {"yes"}, "do": {"pause"}, "answer": {"continue"}, "question": {"1"},
		"decision": {"continue"}, "trip": {"1"}, "kind": {"skip"}, "fingerprint": {"abc"}}
	for _, path := range []string{"/jobs/" + id + "/answer", "/jobs/" + id + "/decide", "/jobs/" + id + "/control",
		"/jobs/" + id + "/retry", "/fixes/fix_20261122_101500/instruct"} {
		view := do(http.MethodPost, path, "view-token", form)
		if view.Code != http.StatusForbidden || !strings.Contains(view.Body.String(), "view token") {
			t.Errorf("POST %s with the view token: %d %q, want 403 saying the view token changes nothing", path, view.Code, view.Body)
		}
		op := do(http.MethodPost, path, "op-token", form)
		if op.Code == http.StatusForbidden || op.Code == http.StatusUnauthorized {
			t.Errorf("POST %s with the operator's token: %d %q, want it taken (whatever the action then says)", path, op.Code, op.Body)
		}
	}
	for _, path := range []string{"/jobs/" + id, "/jobs/" + id + "/items", "/jobs/" + id + "/retry?outcome=failed",
		"/jobs/" + id + "/breaker", "/jobs/" + id + "/charts/chart-rate.csv"} {
		view := do(http.MethodGet, path, "view-token", nil)
		if view.Code != http.StatusOK {
			t.Errorf("GET %s with the view token: %d, want 200", path, view.Code)
		}
		if b := view.Body.String(); strings.Contains(b, s.csrf) || strings.Contains(b, `method="post"`) {
			t.Errorf("GET %s with the view token shows a form or the form secret:\n%s", path, b)
		}
	}
	if b := do(http.MethodGet, "/jobs/"+id, "view-token", nil).Body.String(); !strings.Contains(b, `id="viewer"`) {
		t.Errorf("the view token's job page does not say it is read-only:\n%s", b)
	}
	if code := do(http.MethodGet, "/jobs/"+id, "no-such-token", nil).Code; code != http.StatusUnauthorized {
		t.Errorf("GET with a wrong token: %d, want 401", code)
	}
}

// ?token= with the view token sets the cookie, which then serves as a
// viewer; a loopback page without tokens stays an operator's.
func TestTheViewTokensCookieServesAViewer(t *testing.T) {
	st, id := newJob(t, 3)
	s := New(Config{Store: st, Token: "op-token", ViewToken: "view-token"})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://tenax.example.com/jobs/"+id+"?token=view-token", nil))
	cookies := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("?token=view-token: %d, cookies %v; want a redirect setting the cookie", rec.Code, cookies)
	}
	req := httptest.NewRequest(http.MethodPost, "http://tenax.example.com/jobs/"+id+"/control", strings.NewReader("do=stop"))
	req.AddCookie(cookies[0])
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("a POST with the view token's cookie: %d, want 403", rec.Code)
	}
	if RoleOf(req.Context()) != Operator {
		t.Error("a context the server did not serve should be an operator's")
	}
}
