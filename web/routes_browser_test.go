package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/mock"
)

// countingServer is a mock provider on a real HTTP server that counts
// the requests it was sent.
type countingServer struct {
	*httptest.Server
	requests atomic.Int64
}

func startMockServer(t *testing.T) *countingServer {
	t.Helper()
	srv := mock.New(mock.Config{Latency: 40 * time.Millisecond, LatencyMax: 80 * time.Millisecond})
	c := &countingServer{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(c.Close)
	return c
}

// runNode runs one of web/browser's test files in headless Chromium with
// env, and fails t if it fails.
func runNode(t *testing.T, node, chromium, file string, env ...string) {
	t.Helper()
	env = append(append(os.Environ(), env...), "TENAX_CHROMIUM="+chromium)
	if d := os.Getenv("TENAX_SCREENSHOTS"); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, "TENAX_SCREENSHOTS="+abs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a safety net
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", file)
	cmd.Dir = "browser"
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	t.Logf("node --test %s:\n%s", file, out)
	if err != nil {
		t.Errorf("the browser test %s failed: %v", file, err)
	}
}

// TestBrowserRoutePanelAfterItsServerWasKilled runs a routed job over two
// real mock servers, closes route a's server once it has served some
// calls, and runs web/browser/routes.test.mjs: the page's routes panel
// shows a's breaker open with its failed calls, and b carrying the rest,
// while the run is paused from another terminal (tenax pause).
// Every item succeeds, none is lost. TENAX_SCREENSHOTS=dir saves
// web-routes-down.png there.
func TestBrowserRoutePanelAfterItsServerWasKilled(t *testing.T) {
	node, chromium := browserOrSkip(t)
	a, b := startMockServer(t), startMockServer(t)
	// 1,500 items at 40-80 ms a call, 4 at a time: the run outlasts the
	// tenax pause below on a loaded machine by tens of seconds.
	j := startJob(t, "routes.yaml", 1500, []string{"ROUTE_A=" + a.URL, "ROUTE_B=" + b.URL}, "--ui")
	// Mid-run: once a has served 20 calls, its server goes away.
	deadline := time.Now().Add(2 * time.Minute) // a safety net
	for a.requests.Load() < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("route a was sent %d requests in 2 minutes; stderr:\n%s", a.requests.Load(), j.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	a.CloseClientConnections()
	a.Close()
	served := a.requests.Load()
	// b takes 100 more calls: a's breaker (threshold 3) has opened. Then
	// the run is paused from another terminal, so that the page is read
	// while the run lives; the browser test continues it.
	for from := b.requests.Load(); b.requests.Load() < from+100; {
		if time.Now().After(deadline) {
			t.Fatalf("route b was sent %d requests; stderr:\n%s", b.requests.Load(), j.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	pause := exec.Command(tenax(t), "pause", j.ID, "--home", j.Home, "--by", "ops-terminal")
	if out, err := pause.CombinedOutput(); err != nil {
		t.Fatalf("tenax pause: %v\n%s", err, out)
	}
	runNode(t, node, chromium, "routes.test.mjs", "TENAX_ROUTES_URL="+j.URL)
	if code := j.wait(t); code != 0 {
		t.Errorf("the routed job exited %d, want 0 (b served every item); stderr:\n%s", code, j.stderr)
	}
	if s, f, p := countOutcomes(t, j.Home, j.ID); s != 1500 || f != 0 || p != 0 {
		t.Errorf("the routed job recorded %d succeeded, %d failed, %d pending; want 1500, 0, 0", s, f, p)
	}
	if served < 20 {
		t.Errorf("route a served %d requests before it went down", served)
	}
}
