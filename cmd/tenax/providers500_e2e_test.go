package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/mock"
)

// everyFault is every fault kind of the mock at 1% of requests each.
var everyFault = mock.Faults{
	RateLimit: 0.01, Server: 0.01, Overloaded: 0.01, Timeout: 0.01, Reset: 0.01, Malformed: 0.01,
	InvalidOutput: 0.01, Auth: 0.01, Quota: 0.01, SpendLimit: 0.01, PaymentRequired: 0.01, Forbidden: 0.01,
	TooLarge: 0.01, ContextLength: 0.01, ContentFilter: 0.01, Refusal: 0.01, Truncated: 0.01,
	ModelNotReady: 0.01, ModelTimeout: 0.01,
}

// faultSpec is a 500-item structured job on provider %s against the mock
// at %s: a timeout the Timeout fault is met within, retries and hints
// short, and a breaker that the scattered fatal faults never trip, so that
// every item comes to its own end.
const faultSpec = `
input: items.jsonl
task:
  type: llm
  provider: %s
  base_url: %s
  model: mock-json
  output: json
  prompt: "Describe item {{.n}}"
  max_tokens: 200
  timeout: 1s
validate:
  json_schema: {type: object, required: [text, length]}
retry:
  max_attempts: 10
  max_hint: 5ms
  backoff: {base: 1ms, max: 5ms}
breaker: {threshold: 1000}
concurrency: {max: 8}
cache: {enabled: false}
`

// faultClass is the class an item ends with when the last call the mock
// logged for it met fault f, on provider: "" for a success.
func faultClass(provider, f string) string {
	switch f {
	case "":
		return ""
	case "auth", "payment_required", "forbidden":
		return "fatal"
	case "quota", "spend_limit":
		if provider == "gemini" {
			return "fatal" // a per-day RESOURCE_EXHAUSTED
		}
		return "retryable" // Bedrock throttles a daily quota like the minute's
	case "too_large", "context_length", "content_filter", "refusal":
		return "item"
	case "invalid_output", "truncated":
		return "invalid"
	}
	return "retryable"
}

var describedItem = regexp.MustCompile(`Describe item (\d+)`)

// lastFaults reads the mock's request log: the fault of the last request
// (by arrival) the mock logged for each item.
func lastFaults(t *testing.T, path string) map[int]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type last struct {
		seq   int64
		fault string
	}
	byItem := map[int]last{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var line struct {
			Seq     int64           `json:"seq"`
			Fault   string          `json:"fault"`
			Request json.RawMessage `json:"request"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("bad log line %q: %v", sc.Text(), err)
		}
		m := describedItem.FindSubmatch(line.Request)
		if m == nil {
			t.Fatalf("log line %d names no item: %s", line.Seq, line.Request)
		}
		idx, _ := strconv.Atoi(string(m[1]))
		if l, ok := byItem[idx]; !ok || line.Seq > l.seq {
			byItem[idx] = last{line.Seq, line.Fault}
		}
	}
	out := map[int]string{}
	for idx, l := range byItem {
		out[idx] = l.fault
	}
	return out
}

// TestFiveHundredItemsEndTruthfullyThroughEveryFault runs a 500-item job
// on provider bedrock (the mock checking every SigV4 signature) and on
// provider gemini, with every fault kind of the mock on at 1% each. The
// run ends 1 (some items failed, as some faults are final), every item
// has a record, and each record ends as the last call the mock logged
// for that item says it must: a success after a good answer, and
// otherwise the class of that call's fault; the counts by class of the
// records equal the counts the mock's log gives.
func TestFiveHundredItemsEndTruthfullyThroughEveryFault(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two 500-item jobs")
	}
	for _, provider := range []string{"bedrock", "gemini"} {
		t.Run(provider, func(t *testing.T) {
			const n = 500
			w := newWorkdir(t)
			w.items("items.jsonl", n)
			logPath := filepath.Join(w.dir, "requests.jsonl")
			logFile, err := os.Create(logPath)
			if err != nil {
				t.Fatal(err)
			}
			defer logFile.Close()
			srv := mock.New(mock.Config{Seed: 36, Faults: everyFault, LogRequests: logFile,
				AWSCredentials: map[string]string{"AKIAMOCKE2E000000000": "mock-secret"}, AWSRegion: "us-east-1"})
			ts := httptest.NewServer(srv)
			t.Cleanup(ts.Close)
			t.Cleanup(func() { _ = srv.Close() })
			spec := fmt.Sprintf(faultSpec, provider, ts.URL)
			if provider == "bedrock" {
				spec = strings.Replace(spec, "  model: mock-json", "  region: us-east-1\n  model: mock-json", 1)
			}
			w.write("job.yaml", spec, 0o644)
			env := append(awsChildEnv(t), "GEMINI_API_KEY=AIza-mock", "GOOGLE_API_KEY=")
			r := w.tenaxEnv(env, "run", "job.yaml", "--output", "out.jsonl")
			if r.code != 1 {
				t.Fatalf("run: exit %d, want 1 (finished, with the final faults' failures)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			recs := readRecords(t, filepath.Join(w.dir, "out.jsonl"))
			if len(recs) != n {
				t.Fatalf("%d records, want %d: no item may be lost", len(recs), n)
			}
			faults := lastFaults(t, logPath)
			got, want := map[string]int{}, map[string]int{}
			for _, rec := range recs {
				f, logged := faults[rec.Idx]
				if !logged {
					t.Errorf("item %d has a record but the mock logged no call for it", rec.Idx)
					continue
				}
				class, expect := rec.Class, faultClass(provider, f)
				if rec.Error == "" {
					class = ""
				}
				got[cmpClass(class)]++
				want[cmpClass(expect)]++
				if class != expect {
					t.Errorf("item %d ended %q (%s); its last call met fault %q, which ends it %q", rec.Idx, cmpClass(class), rec.Error, f, cmpClass(expect))
				}
			}
			if !maps.Equal(got, want) {
				t.Errorf("records by class %v; the mock's log says %v", got, want)
			}
			st := srv.Stats()
			if st.AuthErrors == 0 || st.ContentFiltered+st.Refusals == 0 || st.Timeouts == 0 || st.Resets == 0 || st.Malformed == 0 {
				t.Errorf("stats %+v: a fault kind was never met, so its handling was not tested", st)
			}
			if got["fatal"] == 0 || got["item"] == 0 || got["succeeded"] < n*9/10 {
				t.Errorf("records by class %v: want most items to succeed and some fatal and item failures", got)
			}
		})
	}
}

// cmpClass names an outcome for messages: "" is a success.
func cmpClass(c string) string {
	if c == "" {
		return "succeeded"
	}
	return c
}

// TestATamperedAWSSecretFailsEveryBedrockCallAndTheBreakerAsks: the mock
// knows the job's access key id with another secret, so every signature
// the SDK makes is wrong: every call the mock sees is 403
// InvalidSignatureException, every record is fatal and names it, no item
// succeeds, and the breaker trips after its threshold; without a terminal
// the trip aborts the run with exit 3 and the resume command.
func TestATamperedAWSSecretFailsEveryBedrockCallAndTheBreakerAsks(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 50)
	srv := mock.New(mock.Config{AWSCredentials: map[string]string{"AKIAMOCKE2E000000000": "the-real-secret"}})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	w.write("job.yaml", fmt.Sprintf(bedrockSpec, ts.URL)+"breaker: {threshold: 5}\n", 0o644)
	r := w.tenaxEnv(awsChildEnv(t), "run", "job.yaml")
	if r.code != 3 {
		t.Fatalf("run: exit %d, want 3 (aborted by the breaker)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "circuit breaker open") || !strings.Contains(r.stdout, "Resume: tenax resume") {
		t.Errorf("the summary does not show the breaker's trip on the signature:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	recs := readRecords(t, filepath.Join(w.home, "jobs", jobID(t, r), "results.jsonl"))
	for _, rec := range recs {
		if rec.Class != "fatal" || !strings.Contains(rec.Error, "403 InvalidSignatureException") || rec.Attempts != 1 {
			t.Errorf("item %d: class %q attempts %d error %q; want one fatal 403 InvalidSignatureException", rec.Idx, rec.Class, rec.Attempts, rec.Error)
		}
	}
	st := srv.Stats()
	if len(recs) == 0 || st.Succeeded != 0 || st.AuthErrors != st.Requests || st.Requests != int64(len(recs)) {
		t.Errorf("%d records, mock stats %+v; want every call refused as unsigned, one per record, none retried", len(recs), st)
	}
}
