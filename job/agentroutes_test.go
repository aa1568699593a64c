package job_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tenaxhq/tenax/mock"
)

// agentServer is a simulated provider over loopback that counts the
// model answers it gave per item (by the word in its prompt) and, when
// downAfter2 is set, goes down (503) at the first request of a
// conversation that has taken two steps — an outage mid-conversation —
// and stays down.
type agentServer struct {
	srv        *mock.Server
	downAfter2 bool

	mu       sync.Mutex
	down     bool
	answered map[string]int
	// replayed is the steps the first request of an item's carried.
	replayed map[string]int
	// signed counts the requests that carried a thoughtSignature.
	signed int
}

var promptWord = regexp.MustCompile(`Tell me about (w\d+)`)

func (a *agentServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		Messages []struct {
			Role      string          `json:"role"`
			ToolCalls json.RawMessage `json:"tool_calls"`
			Content   json.RawMessage `json:"content"`
		} `json:"messages"`
		// Contents are Gemini's.
		Contents []struct {
			Role  string          `json:"role"`
			Parts json.RawMessage `json:"parts"`
		} `json:"contents"`
	}
	_ = json.Unmarshal(body, &req)
	steps := 0
	for _, m := range req.Messages {
		// OpenAI's tool_calls, Anthropic's tool_use blocks, Bedrock's
		// toolUse blocks.
		if m.Role == "assistant" && (len(m.ToolCalls) > 2 || bytes.Contains(m.Content, []byte(`"type":"tool_use"`)) ||
			bytes.Contains(m.Content, []byte(`"toolUse":`))) {
			steps++
		}
	}
	for _, c := range req.Contents {
		if c.Role == "model" && bytes.Contains(c.Parts, []byte(`"functionCall":`)) {
			steps++
		}
	}
	word := ""
	if m := promptWord.FindSubmatch(body); m != nil {
		word = string(m[1])
	}
	a.mu.Lock()
	if a.downAfter2 && steps >= 2 {
		a.down = true
	}
	if a.down {
		a.mu.Unlock()
		http.Error(w, `{"error":{"message":"the deployment is down","type":"server_error"}}`, http.StatusServiceUnavailable)
		return
	}
	if _, seen := a.replayed[word]; !seen {
		a.replayed[word] = steps
	}
	a.answered[word]++
	if bytes.Contains(body, []byte(`"thoughtSignature":`)) {
		a.signed++
	}
	a.mu.Unlock()
	a.srv.ServeHTTP(w, r)
}

func serveAgent(t *testing.T, downAfter2 bool) (*agentServer, string) {
	t.Helper()
	a := &agentServer{srv: mock.New(mock.Config{}), downAfter2: downAfter2, answered: map[string]int{}, replayed: map[string]int{}}
	ts := httptest.NewServer(a)
	t.Cleanup(ts.Close)
	return a, ts.URL
}

// An agent item on a routed spec: route a (OpenAI's wire) goes down
// after a conversation's second step; with fallbacks.outage the item
// goes on at its third step on route b (Anthropic's wire), its first two
// steps replayed there in Anthropic's format from the step log, not
// asked again. Every item finishes, the moved one's record names b with
// a's try, and no step is paid twice: the answers both servers gave are
// the answers steps.jsonl holds, item by item.
func TestAnAgentConversationMovesToAnotherRouteAtAnOutage(t *testing.T) {
	moveConversation(t, `{name: b, provider: anthropic, model: mock-agent, base_url: "URL", api_key: "${ANTHROPIC_API_KEY}", tier: 1}`)
}

// The same move from OpenAI's wire to Bedrock's Converse and to Gemini's
// generateContent: the two steps recorded on a go to b as toolUse and
// toolResult blocks, or functionCall and functionResponse parts, and the
// conversation ends there. Before, the spec refused both routes ("does
// not take tools yet").
func TestAnAgentConversationMovesFromOpenAIToBedrockOrGemini(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAMOCKMOCKMOCKMOCK")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "mock-secret-access-key")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "no-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "no-credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for name, route := range map[string]string{
		"bedrock": `{name: b, provider: bedrock, model: mock-agent, region: us-east-1, base_url: "URL", tier: 1}`,
		"gemini":  `{name: b, provider: gemini, model: mock-agent, base_url: "URL", api_key: "${ANTHROPIC_API_KEY}", tier: 1}`,
	} {
		t.Run(name, func(t *testing.T) { moveConversation(t, route) })
	}
}

// moveConversation runs 12 agent items over route a (OpenAI's wire), down
// from a conversation's third step, and routeB (its base_url "URL"):
// every item ends, the one moved carries its two steps to b, and no step
// is paid twice.
func moveConversation(t *testing.T, routeB string) {
	t.Helper()
	moveConversationFrom(t, `{name: a, provider: openai, model: mock-agent, base_url: "URL/v1", api_key: "${OPENAI_API_KEY}"}`, routeB)
}

// moveConversationFrom is moveConversation from routeA (its base_url
// "URL"); it returns the two servers.
func moveConversationFrom(t *testing.T, routeA, routeB string) (srvA, srvB *agentServer) {
	t.Helper()
	srvA, urlA := serveAgent(t, true)
	srvB, urlB := serveAgent(t, false)
	w := newLLMWorld(t)
	w.words("items.jsonl", 12)
	w.file("job.yaml", `
input: items.jsonl
task:
  type: llm
  prompt: "Tell me about {{.word}}"
  tools:
    - name: count
      parameters: {type: object, required: [text], properties: {text: {type: string}}}
      exec: {argv: [wc, -c], stdin: "{{.args.text}}"}
      idempotent: true
  max_consecutive_errors: 5
routes:
  - `+strings.Replace(routeA, "URL", urlA, 1)+`
  - `+strings.Replace(routeB, "URL", urlB, 1)+`
fallbacks: {outage: true}
retry: {max_attempts: 3, backoff: {base: 1ms, max: 2ms}}
breaker: {threshold: 100}
concurrency: {max: 1}
cache: {enabled: false}
`, 0o644)
	res := w.run("job.yaml")
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, want 0", res.ExitCode)
	}
	answers := stepAnswers(t, filepath.Join(w.home, "jobs", res.JobID, "steps.jsonl"))
	moved := 0
	for idx, rec := range w.records(res.JobID) {
		word := "w" + strconv.Itoa(idx)
		a, b := srvA.answered[word], srvB.answered[word]
		if a+b != answers[idx] || rec.Agent == nil || rec.Agent.Steps != answers[idx] {
			t.Errorf("item %d: %d answers from a and %d from b, %d in steps.jsonl, record %+v: a step was paid twice or lost", idx, a, b, answers[idx], rec.Agent)
		}
		if rec.Failed() {
			t.Errorf("item %d failed: %s", idx, rec.Error)
		}
		if a == 2 && b > 0 {
			moved++
			if got := srvB.replayed[word]; got != 2 {
				t.Errorf("item %d's first request on b carried %d steps, want its 2 from a replayed in b's format", idx, got)
			}
			if rec.Route != "b" || len(rec.Tries) != 1 || rec.Tries[0].Route != "a" {
				t.Errorf("item %d moved mid-conversation: route %q, tries %+v; want b, after a", idx, rec.Route, rec.Tries)
			}
		}
	}
	if moved != 1 {
		t.Errorf("%d items moved after their second step, want 1 (a is down from then on)", moved)
	}
	return srvA, srvB
}

// A conversation moves to and from a Gemini 3 model (the mock's
// gemini-3-mock-agent, which signs its calls and refuses them back
// unsigned). From OpenAI's wire, the two steps recorded there carry no
// signature: they go to Gemini 3 with Google's documented skip value and
// are answered, not refused. From Gemini 3 to Anthropic's wire, the
// signatures stay behind: b is sent none.
func TestAnAgentConversationMovesToAndFromGemini3(t *testing.T) {
	t.Run("from openai", func(t *testing.T) {
		_, b := moveConversationFrom(t, `{name: a, provider: openai, model: mock-agent, base_url: "URL/v1", api_key: "${OPENAI_API_KEY}"}`,
			`{name: b, provider: gemini, model: gemini-3-mock-agent, base_url: "URL", api_key: "${ANTHROPIC_API_KEY}", tier: 1}`)
		if b.signed == 0 {
			t.Errorf("Gemini 3 on b was sent no thoughtSignature: want its own and the skip value on the steps moved from a")
		}
	})
	t.Run("to anthropic", func(t *testing.T) {
		a, b := moveConversationFrom(t, `{name: a, provider: gemini, model: gemini-3-mock-agent, base_url: "URL", api_key: "${ANTHROPIC_API_KEY}"}`,
			`{name: b, provider: anthropic, model: mock-agent, base_url: "URL", api_key: "${ANTHROPIC_API_KEY}", tier: 1}`)
		if a.signed == 0 || b.signed != 0 {
			t.Errorf("a (Gemini 3) was sent %d requests with a thoughtSignature, b (Anthropic) %d: want some on a and none on b", a.signed, b.signed)
		}
	})
}

// stepAnswers counts the model answers a step log holds, by idx.
func stepAnswers(t *testing.T, path string) map[int]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := map[int]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Idx  int `json:"_idx"`
			Step struct {
				Kind string `json:"kind"`
			} `json:"step"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Step.Kind == "answer" {
			n[line.Idx]++
		}
	}
	return n
}
