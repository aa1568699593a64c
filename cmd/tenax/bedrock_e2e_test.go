package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/tenaxhq/tenax/mock"
)

// bedrockSpec is a Bedrock job against the mock at %s, its model priced
// so that the records carry a cost.
const bedrockSpec = `
input: items.jsonl
task:
  type: llm
  provider: bedrock
  region: us-east-1
  base_url: %s
  model: mock-echo
  prompt: "Describe item {{.n}}"
  max_tokens: 200
  timeout: 5s
prices: {mock-echo: {input_per_mtok: 3, output_per_mtok: 15}}
retry:
  max_attempts: 10
  max_hint: 5ms
  backoff: {base: 1ms, max: 5ms}
concurrency: {max: 4}
`

// awsChildEnv is a child's AWS environment: static credentials, no
// shared files or profile, no instance metadata; nothing but the mock on
// loopback is reached.
func awsChildEnv(t *testing.T) []string {
	dir := t.TempDir()
	return []string{
		"AWS_ACCESS_KEY_ID=AKIAMOCKE2E000000000", "AWS_SECRET_ACCESS_KEY=mock-secret", "AWS_SESSION_TOKEN=",
		"AWS_PROFILE=", "AWS_REGION=", "AWS_DEFAULT_REGION=",
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// TestBedrockJobEndsTruthfullyThroughTheRetriedFaults: a job on provider
// bedrock against the mock's Converse endpoint, with throttling, 500s,
// 503s, models not ready and model timeouts, ends 0 with every item's
// record carrying the output, finish_reason end_turn, the tokens and the
// cost, and the SDK never retried on its own.
func TestBedrockJobEndsTruthfullyThroughTheRetriedFaults(t *testing.T) {
	const n = 30
	w := newWorkdir(t)
	w.items("items.jsonl", n)
	srv := mock.New(mock.Config{Seed: 7, Faults: mock.Faults{
		RateLimit: 0.1, Server: 0.05, Overloaded: 0.05, ModelNotReady: 0.05, ModelTimeout: 0.05,
	}})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	w.write("job.yaml", fmt.Sprintf(bedrockSpec, ts.URL), 0o644)

	run := w.tenaxEnv(awsChildEnv(t), "run", "job.yaml")
	if run.code != 0 {
		t.Fatalf("run: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", run.code, run.stdout, run.stderr)
	}
	f, err := os.Open(filepath.Join(w.home, "jobs", jobID(t, run), "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type bedrockRecord struct {
		Idx          int    `json:"_idx"`
		Output       string `json:"output"`
		FinishReason string `json:"finish_reason"`
		Usage        struct {
			Input  int64 `json:"input_tokens"`
			Output int64 `json:"output_tokens"`
		} `json:"usage"`
		CostUSD  *float64 `json:"cost_usd"`
		Attempts int      `json:"attempts"`
	}
	var recs []bedrockRecord
	sc := bufio.NewScanner(f)
	attempts := 0
	for sc.Scan() {
		var r bedrockRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bad record %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
		attempts += r.Attempts
	}
	if len(recs) != n {
		t.Fatalf("%d records, want %d", len(recs), n)
	}
	for _, r := range recs {
		if r.Output != fmt.Sprintf("Describe item %d", r.Idx) || r.FinishReason != "end_turn" {
			t.Errorf("item %d: output %q finish_reason %q, want the echoed prompt and end_turn", r.Idx, r.Output, r.FinishReason)
		}
		if r.Usage.Input <= 0 || r.Usage.Output <= 0 || r.CostUSD == nil || *r.CostUSD <= 0 {
			t.Errorf("item %d: usage %+v cost %v, want Bedrock's token counts and their price", r.Idx, r.Usage, r.CostUSD)
		}
	}
	st := srv.Stats()
	if st.Requests != int64(attempts) {
		t.Errorf("the mock saw %d requests for %d attempts: the SDK retried on its own", st.Requests, attempts)
	}
	if st.RateLimited == 0 || st.Overloaded == 0 || st.ServerErrors == 0 {
		t.Errorf("stats %+v: the faults were never met, so their retries were not tested", st)
	}
}
