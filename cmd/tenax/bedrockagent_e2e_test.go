package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tenaxhq/tenax/mock"
)

// bedrockAgentSpec is an agent job on provider bedrock against the mock at
// %s, with two tools and a JSON Schema for the final answer.
const bedrockAgentSpec = `
input: items.jsonl
task:
  type: llm
  provider: bedrock
  region: us-east-1
  base_url: %s
  model: mock-agent
  prompt: "Look up item {{.n}}"
  max_tokens: 500
  timeout: 5s
  tools:
    - name: search
      parameters: {type: object, required: [query], properties: {query: {type: string}}}
      exec: {argv: [echo, "search found {{.args.query}}"]}
      idempotent: true
    - name: fetch
      parameters: {type: object, required: [query], properties: {query: {type: string}}}
      exec: {argv: [echo, "fetch found {{.args.query}}"]}
      idempotent: true
  max_consecutive_errors: 5
validate:
  json_schema: {type: object, required: [answer], properties: {answer: {type: string}}, additionalProperties: false}
retry: {max_attempts: 3, backoff: {base: 1ms, max: 2ms}}
cache: {enabled: false}
concurrency: {max: 4}
`

// TestABedrockAgentWithASchemaEndsByCallingTheOutputTool: an agent whose
// answer has a JSON Schema runs on Bedrock's Converse through the AWS SDK
// against the mock: every request sends the schema as the tool output
// beside the agent's two tools at the model's choice, the model calls the
// tools over steps and ends by calling output, whose input is each item's
// output; a final answer in text instead is fed back and healed. Before,
// tenax validate refused the spec ("bedrock asks for validate.json_schema's
// JSON with a tool the model must call").
func TestABedrockAgentWithASchemaEndsByCallingTheOutputTool(t *testing.T) {
	const n = 40
	w := newWorkdir(t)
	w.items("items.jsonl", n)
	srv := mock.New(mock.Config{Seed: 7})
	var mu sync.Mutex
	var bodies [][]byte
	ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		srv.ServeHTTP(rw, r)
	}))
	t.Cleanup(ts.Close)
	w.write("job.yaml", fmt.Sprintf(bedrockAgentSpec, ts.URL), 0o644)

	run := w.tenaxEnv(awsChildEnv(t), "run", "job.yaml")
	if run.code != 0 {
		failures, _ := os.ReadFile(filepath.Join(w.home, "jobs", jobID(t, run), "failures.jsonl"))
		t.Fatalf("run: exit %d, want 0\nstdout:\n%s\nstderr:\n%s\nfailures:\n%s", run.code, run.stdout, run.stderr, failures)
	}
	recs := bedrockAgentRecords(t, filepath.Join(w.home, "jobs", jobID(t, run), "results.jsonl"))
	if len(recs) != n {
		t.Fatalf("%d records, want %d", len(recs), n)
	}
	steps, healed := 0, 0
	for _, r := range recs {
		if want := fmt.Sprintf(`{"answer":"Look up item %d"}`, r.Idx); string(r.Output) != want || r.Error != "" {
			t.Errorf("item %d: output %s error %q, want the output tool's input %s", r.Idx, r.Output, r.Error, want)
		}
		if r.Agent == nil {
			t.Errorf("item %d: no agent stats in the record", r.Idx)
			continue
		}
		steps += r.Agent.Steps
		if r.HealAttempts > 0 {
			healed++
		}
	}
	if steps <= n {
		t.Errorf("%d steps over %d items: want the tools called before the answer", steps, n)
	}
	if healed == 0 {
		t.Errorf("no item was healed: the mock's final answers in text (10%%) were never met, so their feedback was not tested")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, b := range bodies {
		var req struct {
			ToolConfig struct {
				ToolChoice map[string]any `json:"toolChoice"`
				Tools      []struct {
					ToolSpec struct {
						Name string `json:"name"`
					} `json:"toolSpec"`
				} `json:"tools"`
			} `json:"toolConfig"`
		}
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatalf("a request that is not JSON: %s", b)
		}
		var names []string
		for _, tool := range req.ToolConfig.Tools {
			names = append(names, tool.ToolSpec.Name)
		}
		if _, auto := req.ToolConfig.ToolChoice["auto"]; !auto || strings.Join(names, ",") != "search,fetch,output" {
			t.Fatalf("a request's toolConfig: tools %v, toolChoice %v; want search, fetch and output at the model's choice (auto)", names, req.ToolConfig.ToolChoice)
		}
	}
}

// bedrockAgentRecord is what the test reads of an agent item's record.
type bedrockAgentRecord struct {
	Idx          int             `json:"_idx"`
	Output       json.RawMessage `json:"output"`
	Error        string          `json:"error"`
	HealAttempts int             `json:"heal_attempts"`
	Agent        *struct {
		Steps int `json:"steps"`
	} `json:"agent"`
}

func bedrockAgentRecords(t *testing.T, path string) []bedrockAgentRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []bedrockAgentRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r bedrockAgentRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bad record %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}
