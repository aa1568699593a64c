package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// agentRouteServer is a provider over loopback, the mock behind it,
// logging each answered model request by the item's word and the steps
// the conversation had taken (OpenAI tool_calls or Anthropic tool_use
// turns): the step it asked for. With closeAfter2 it goes down at the
// first request of a conversation past its second step: that request is
// answered 503 and every later one has its connection cut unanswered and
// uncounted, so every answer counted is an answer delivered.
type agentRouteServer struct {
	srv         *mock.Server
	ts          *httptest.Server
	closeAfter2 bool

	mu       sync.Mutex
	closed   bool
	answered map[string]int // "word step n" → answers given
	firstOf  map[string]int // word → the steps its first request here carried
}

var routeWord = regexp.MustCompile(`Tell me about (w\d+)`)

func (a *agentRouteServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		Messages []struct {
			Role      string          `json:"role"`
			ToolCalls json.RawMessage `json:"tool_calls"`
			Content   json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	steps := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" && (len(m.ToolCalls) > 2 || bytes.Contains(m.Content, []byte(`"type":"tool_use"`))) {
			steps++
		}
	}
	word := ""
	if m := routeWord.FindSubmatch(body); m != nil {
		word = string(m[1])
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		// Gone: the connection is cut before any answer, as a dead
		// server's would be. Closing the httptest server instead raced
		// its idle-connection sweep against a request just read from a
		// kept-alive connection: the handler counted an answer the
		// client never received, and the test blamed tenax for asking
		// the step again.
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	if a.closeAfter2 && steps >= 2 {
		a.closed = true
		a.mu.Unlock()
		http.Error(w, `{"error":{"message":"the deployment is going down","type":"server_error"}}`, http.StatusServiceUnavailable)
		return
	}
	if _, seen := a.firstOf[word]; !seen {
		a.firstOf[word] = steps
	}
	a.answered[fmt.Sprintf("%s step %d", word, steps+1)]++
	a.mu.Unlock()
	a.srv.ServeHTTP(w, r)
}

func serveAgentRoute(t *testing.T, closeAfter2 bool) (*agentRouteServer, string) {
	t.Helper()
	a := &agentRouteServer{srv: mock.New(mock.Config{}), closeAfter2: closeAfter2, answered: map[string]int{}, firstOf: map[string]int{}}
	a.ts = httptest.NewServer(a)
	t.Cleanup(a.ts.Close)
	return a, a.ts.URL
}

// TestAnAgentConversationMovesToAnotherRouteOnWorkers is the job
// package's TestAnAgentConversationMovesToAnotherRouteAtAnOutage on two
// River workers: route a (OpenAI's wire) goes down at the first
// request of a conversation's third step; with fallbacks.outage the item
// goes on, on whichever worker runs it next, at its third step on route b
// (Anthropic's wire), its steps replayed from tenax_notes in Anthropic's
// format. Every item succeeds, no step of an item was answered twice by
// the two servers together, and the answers they gave are the answers
// the step log holds.
func TestAnAgentConversationMovesToAnotherRouteOnWorkers(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	t.Setenv("OPENAI_API_KEY", "k")
	t.Setenv("ANTHROPIC_API_KEY", "k")
	srvA, urlA := serveAgentRoute(t, true)
	srvB, urlB := serveAgentRoute(t, false)
	const n = 12
	dir := t.TempDir()
	var words strings.Builder
	for i := range n {
		fmt.Fprintf(&words, `{"word": "w%d"}`+"\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte(words.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := `
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
  - {name: a, provider: openai, model: mock-agent, base_url: "` + urlA + `/v1", api_key: "${OPENAI_API_KEY}"}
  - {name: b, provider: anthropic, model: mock-agent, base_url: "` + urlB + `", api_key: "${ANTHROPIC_API_KEY}", tier: 1}
fallbacks: {outage: true}
retry: {max_attempts: 3, backoff: {base: 1ms, max: 2ms}}
breaker: {threshold: 100}
cache: {enabled: false}
`
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	e := enqueue(t, c, filepath.Join(dir, "job.yaml"))
	startWorkers(t, c, 2, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
	waitFor(t, "the job to finish", func() (bool, error) { return jobState(t, c, e.JobID) != store.StateRunning, nil })
	oneRecordEach(t, dsn, e.JobID, n, "(moved between routes)")

	srvA.mu.Lock()
	defer srvA.mu.Unlock()
	srvB.mu.Lock()
	defer srvB.mu.Unlock()
	if !srvA.closed {
		t.Fatal("route a's server never closed: the test moved nothing")
	}
	for step, paid := range srvA.answered {
		if paid+srvB.answered[step] > 1 {
			t.Errorf("%s was answered %d times by a and %d by b: a recorded step was asked again", step, paid, srvB.answered[step])
		}
	}
	for step, paid := range srvB.answered {
		if paid > 1 {
			t.Errorf("%s was answered %d times by b", step, paid)
		}
	}
	answers := noteAnswers(t, dsn, e.JobID)
	j, err := c.Store().OpenReadOnly(t.Context(), e.JobID)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	moved := 0
	err = j.Scan(t.Context(), func(rec store.Record) error {
		word := fmt.Sprintf("w%d", rec.Idx)
		a, b := 0, 0
		for step, k := range srvA.answered {
			if strings.HasPrefix(step, word+" ") {
				a += k
			}
		}
		for step, k := range srvB.answered {
			if strings.HasPrefix(step, word+" ") {
				b += k
			}
		}
		if rec.Failed() {
			t.Errorf("item %d failed: %s", rec.Idx, rec.Error)
		}
		if a+b != answers[rec.Idx] || rec.Agent == nil || rec.Agent.Steps != answers[rec.Idx] {
			t.Errorf("item %d: %d answers from a and %d from b, %d in tenax_notes, record %+v: a step was paid twice or lost", rec.Idx, a, b, answers[rec.Idx], rec.Agent)
		}
		if a > 0 && b > 0 {
			moved++
			if got := srvB.firstOf[word]; got != a {
				t.Errorf("item %d's first request on b carried %d steps, want its %d from a replayed as tool_use blocks", rec.Idx, got, a)
			}
			if rec.Route != "b" || len(rec.Tries) != 1 || rec.Tries[0].Route != "a" {
				t.Errorf("item %d moved mid-conversation: route %q, tries %+v; want b, after a", rec.Idx, rec.Route, rec.Tries)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if moved == 0 {
		t.Error("no item moved mid-conversation from a to b")
	}
	t.Logf("%d items moved mid-conversation", moved)
}

// noteAnswers counts the model answers a job's step log in tenax_notes
// holds, by idx.
func noteAnswers(t *testing.T, dsn, jobID string) map[int]int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), `SELECT kind, count(*) FROM tenax_notes WHERE job_id = $1 AND kind LIKE 'agent-steps:%' AND convert_from(note, 'UTF8')::jsonb->>'kind' = 'answer' GROUP BY kind`, jobID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int{}
	var kind string
	var k int
	_, err = pgx.ForEachRow(rows, []any{&kind, &k}, func() error {
		var idx int
		if _, err := fmt.Sscanf(kind, "agent-steps:%d", &idx); err != nil {
			return err
		}
		out[idx] = k
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
