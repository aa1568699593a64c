package web

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
)

func TestListenOnLoopbackNeedsNoToken(t *testing.T) {
	st, id := newJob(t, 3)
	ep, err := Listen("127.0.0.1:0", Config{Store: st, Job: id})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if ep.Token != "" || strings.Contains(ep.URL, "token") {
		t.Errorf("loopback endpoint %q has a token", ep.URL)
	}
	resp, err := http.Get(ep.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/jobs/"+id {
		t.Errorf("GET %s: %s at %s, want the job's page", ep.URL, resp.Status, resp.Request.URL.Path)
	}
}

func TestListenOffLoopbackRequiresAToken(t *testing.T) {
	st, id := newJob(t, 3)
	ep, err := Listen("0.0.0.0:0", Config{Store: st, Job: id})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if len(ep.Token) != 32 || !strings.HasSuffix(ep.URL, "/?token="+ep.Token) {
		t.Fatalf("endpoint %q with token %q: want a 128-bit token in the URL", ep.URL, ep.Token)
	}
	// Reach it through loopback, with and without the token.
	u, _ := url.Parse(ep.URL)
	local := "http://127.0.0.1:" + u.Port() + "/"
	resp, err := http.Get(local)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %s, want 401 even from loopback", resp.Status)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err = c.Get(local + "?token=" + ep.Token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.RawQuery != "" {
		t.Errorf("with the token: %s at %s, want the page, the token gone from the URL", resp.Status, resp.Request.URL)
	}
}
