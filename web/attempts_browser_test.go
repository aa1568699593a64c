package web_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"

	"github.com/tenaxhq/tenax/mock"
)

// flakyDeployment is a mock provider that answers 503, naming itself, to
// every request about the item "flaky" until fixed.
func flakyDeployment(t *testing.T, name string, fixed *atomic.Bool) string {
	t.Helper()
	srv := mock.New(mock.Config{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !fixed.Load() && bytes.Contains(body, []byte("'flaky'")) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"error": {"message": "deployment %s is down for this item", "type": "server_error", "code": null}}`, name)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestBrowserItemWithThreeAttemptsOverTwoRuns runs a routed job whose
// item "flaky" fails on both routes (two attempts, the first route in the
// record's tries), fixes the deployments, re-runs the failure with tenax
// resume --retry-failures (a third attempt, which succeeds), and runs
// web/browser/attempts.test.mjs against tenax ui: the item's page shows
// all three attempts, each with its route and the error's words.
func TestBrowserItemWithThreeAttemptsOverTwoRuns(t *testing.T) {
	node, chromium := browserOrSkip(t)
	var fixed atomic.Bool
	env := []string{"ROUTE_A=" + flakyDeployment(t, "A", &fixed), "ROUTE_B=" + flakyDeployment(t, "B", &fixed)}
	j := startJobWords(t, "attempts.yaml", []string{"flaky", "ok1", "ok2", "ok3"}, env)
	if code := j.wait(t); code != 1 {
		t.Fatalf("the first run exited %d, want 1 (finished with a failure); stderr:\n%s", code, j.stderr)
	}
	fixed.Store(true)
	resume := exec.Command(tenax(t), "resume", j.ID, "--home", j.Home, "--retry-failures", "-q")
	resume.Env = append(os.Environ(), env...)
	if out, err := resume.CombinedOutput(); err != nil {
		t.Fatalf("tenax resume --retry-failures: %v\n%s", err, out)
	}
	ui := startUI(t, env, j.ID, "--home", j.Home)
	runNode(t, node, chromium, "attempts.test.mjs", "TENAX_ATTEMPTS_URL="+ui.URL+"/jobs/"+j.ID+"/items/0")
}
