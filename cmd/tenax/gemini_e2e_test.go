package main

import (
	"bufio"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/tenaxhq/tenax/mock"
)

// TestGeminiExampleEndsTruthfullyOnTheMock runs examples/gemini.yaml as it
// ships, pointed at the mock's Gemini API with any key, through per-minute
// quotas (429 RESOURCE_EXHAUSTED with a retryDelay), 500s and 503s: it
// ends 0, every record carries JSON that fits the schema, finish_reason
// STOP and the tokens, and the SDK never retried on its own.
func TestGeminiExampleEndsTruthfullyOnTheMock(t *testing.T) {
	w := newWorkdir(t)
	srv := mock.New(mock.Config{Seed: 11, Faults: mock.Faults{RateLimit: 0.3, Server: 0.1, Overloaded: 0.1}})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	spec, err := filepath.Abs(filepath.Join("..", "..", "examples", "gemini.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"GEMINI_BASE_URL=" + ts.URL, "GEMINI_API_KEY=AIza-mock", "GEMINI_MODEL=mock-echo", "GOOGLE_API_KEY="}
	run := w.tenaxEnv(env, "run", spec)
	if run.code != 0 {
		t.Fatalf("run: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", run.code, run.stdout, run.stderr)
	}
	f, err := os.Open(filepath.Join(w.home, "jobs", jobID(t, run), "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs, attempts int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			Idx          int             `json:"_idx"`
			Output       json.RawMessage `json:"output"`
			FinishReason string          `json:"finish_reason"`
			Usage        struct {
				Input  int64 `json:"input_tokens"`
				Output int64 `json:"output_tokens"`
			} `json:"usage"`
			Attempts int `json:"attempts"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bad record %q: %v", sc.Text(), err)
		}
		recs++
		attempts += r.Attempts
		var out struct {
			ES *string `json:"es"`
		}
		if json.Unmarshal(r.Output, &out) != nil || out.ES == nil || r.FinishReason != "STOP" {
			t.Errorf("item %d: output %s finish_reason %q, want {\"es\": …} and STOP", r.Idx, r.Output, r.FinishReason)
		}
		if r.Usage.Input <= 0 || r.Usage.Output <= 0 {
			t.Errorf("item %d: usage %+v, want Gemini's token counts", r.Idx, r.Usage)
		}
	}
	if recs == 0 {
		t.Fatal("no records")
	}
	st := srv.Stats()
	if st.Requests != int64(attempts) {
		t.Errorf("the mock saw %d requests for %d attempts: the SDK retried on its own", st.Requests, attempts)
	}
	if st.RateLimited+st.Overloaded+st.ServerErrors == 0 {
		t.Errorf("stats %+v: the faults were never met, so their retries were not tested", st)
	}
}
