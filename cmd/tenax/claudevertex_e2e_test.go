package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tenaxhq/tenax/mock"
)

// TestClaudeOnVertexRunSucceedsWithGoogleCredentials: `tenax run` of a
// provider anthropic task with a project and a location, against the
// mock's rawPredict (base_url) with one call in five rate limited (429)
// or overloaded (529), authenticated by the application default
// credentials (a service-account file whose token endpoint is on
// loopback). Every item succeeds after its retries; every request was on
// the location's rawPredict path with the token endpoint's bearer token,
// and $ANTHROPIC_API_KEY was never sent.
func TestClaudeOnVertexRunSucceedsWithGoogleCredentials(t *testing.T) {
	srv := mock.New(mock.Config{Faults: mock.Faults{RateLimit: 0.1, Overloaded: 0.1}, Seed: 7})
	var (
		mu    sync.Mutex
		paths = map[string]int{}
		auths = map[string]int{}
		keys  int
		codes = map[int]int{}
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths[r.URL.Path]++
		auths[r.Header.Get("Authorization")]++
		if r.Header.Get("X-Api-Key") != "" || r.Header.Get("Anthropic-Version") != "" {
			keys++
		}
		mu.Unlock()
		rec := &statusRecorder{ResponseWriter: w}
		srv.ServeHTTP(rec, r)
		mu.Lock()
		codes[rec.status]++
		mu.Unlock()
	}))
	t.Cleanup(ts.Close)
	w := newWorkdir(t)
	sa, issued := serviceAccount(t, w.dir)
	w.items("items.jsonl", 40)
	w.write("job.yaml", fmt.Sprintf(`
input: items.jsonl
task:
  type: llm
  provider: anthropic
  project: my-project
  region: europe-west1
  base_url: %s
  model: mock-echo
  prompt: "Describe item {{.n}}"
  timeout: 5s
retry: {max_attempts: 10, max_hint: 5ms, backoff: {base: 1ms, max: 5ms}}
breaker: {threshold: 1000}
concurrency: {max: 4}
cache: {enabled: false}
`, ts.URL), 0o644)
	env := append(googleChildEnv(sa), "CLOUD_ML_REGION=", "ANTHROPIC_API_KEY=sk-ant-must-not-be-sent")
	r := w.tenaxEnv(env, "run", "job.yaml", "--output", "out.jsonl")
	if r.code != 0 {
		t.Fatalf("run: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	recs := readRouted(t, filepath.Join(w.dir, "out.jsonl"))
	if len(recs) != 40 {
		t.Errorf("%d records, want 40", len(recs))
	}
	for _, rec := range recs {
		if rec.Error != "" {
			t.Errorf("item %d: %s; want success", rec.Idx, rec.Error)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	const want = "/v1/projects/my-project/locations/europe-west1/publishers/anthropic/models/mock-echo:rawPredict"
	if len(paths) != 1 || paths[want] == 0 {
		t.Errorf("paths seen %v, want only %s", paths, want)
	}
	if len(auths) != 1 || auths["Bearer ya29.e2e-token"] == 0 {
		t.Errorf("Authorization values seen %v, want only the token endpoint's bearer", auths)
	}
	if keys != 0 {
		t.Errorf("%d requests carried x-api-key or anthropic-version, want none", keys)
	}
	if codes[429] == 0 || codes[529] == 0 {
		t.Errorf("statuses %v: the faults never fired, so retrying them was not shown", codes)
	}
	if issued.Load() == 0 {
		t.Error("no access token was asked of the service account's token endpoint")
	}
}

// TestClaudeOnVertexValidateSaysWhatIsMissing: `tenax validate` of a
// Claude on Vertex AI spec without a location, and of one asking for
// batch mode, exits 2 naming the key and the reason.
func TestClaudeOnVertexValidateSaysWhatIsMissing(t *testing.T) {
	for name, tc := range map[string]struct{ extra, want string }{
		"no location": {"", "task.region: missing: Claude on Vertex AI needs a location"},
		"batch mode":  {"  region: us-east5\n  mode: batch\n", "batch mode is not offered for Claude on Vertex AI"},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorkdir(t)
			w.items("items.jsonl", 1)
			w.write("job.yaml", "input: items.jsonl\ntask:\n  type: llm\n  provider: anthropic\n  project: my-project\n  model: claude-sonnet-4-5@20250929\n  prompt: hi\n"+tc.extra, 0o644)
			r := w.tenaxEnv(googleChildEnv(filepath.Join(w.dir, "none.json")), "validate", "job.yaml")
			if r.code != 2 || !strings.Contains(r.stdout+r.stderr, tc.want) {
				t.Errorf("validate: exit %d, output:\n%s%s\nwant exit 2 and %q", r.code, r.stdout, r.stderr, tc.want)
			}
		})
	}
}

// statusRecorder keeps the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

var _ = json.Marshal
var _ = os.Getenv
