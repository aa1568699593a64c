package batch_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/batch"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/llm"
	"github.com/tenaxhq/tenax/task/llm/gemini"
)

// A Gemini batch's requests are the generateContent bodies the online call
// sends, and a request that failed inside it comes back as the error the
// same failure online would be: INTERNAL retryable, PERMISSION_DENIED
// fatal.
func TestGeminiBatchAnswersAndFailuresAreTheOnlineOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, llm.ProviderGemini, 0, mock.Config{Seed: 3, Faults: mock.Faults{Server: 0.2, Auth: 0.1},
			Batch: mock.BatchConfig{ProcessingTime: time.Minute}})
		defer w.close()
		codec := w.task.Batch()
		var reqs []batch.Request
		items := map[string]task.Item{}
		for i := range 60 {
			it := task.Item{Idx: i, Fields: map[string]any{"word": "w" + string(rune('a'+i%26))}}
			body, err := codec.Body(it)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(body), `"contents"`) || !strings.Contains(string(body), `"responseMimeType":"application/json"`) {
				t.Fatalf("request body %s is not the online generateContent body", body)
			}
			id := batch.CustomID(i, 1)
			reqs = append(reqs, batch.Request{CustomID: id, Body: body})
			items[id] = it
		}
		ctx := context.Background()
		id, err := w.client.Submit(ctx, "job-w1-c0", reqs)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(id, "batches/") {
			t.Errorf("batch id %q; want the Operation's name, batches/{id}", id)
		}
		st, err := w.client.Status(ctx, id)
		if err != nil || st.Ended || st.Counts.Total != 60 {
			t.Fatalf("status right after the create: %+v, %v; want 60 requests not ended", st, err)
		}
		time.Sleep(2 * time.Minute)
		if st, err = w.client.Status(ctx, id); err != nil || !st.Ended || st.State != "JOB_STATE_SUCCEEDED" {
			t.Fatalf("status after processing: %+v, %v; want ended, succeeded", st, err)
		}
		var ok, retryable, fatal int
		err = w.client.Results(ctx, st, func(a batch.Answer) error {
			it, known := items[a.CustomID]
			if !known {
				t.Errorf("an answer for %q, which was not sent", a.CustomID)
			}
			delete(items, a.CustomID)
			if a.Err != nil {
				e, isLLM := errors.AsType[*llm.Error](a.Err)
				switch c := classify.Classify(a.Err).Class; {
				case !isLLM:
					t.Errorf("%s: error %v is not an *llm.Error", a.CustomID, a.Err)
				case e.Status == 500 && e.Type == "INTERNAL" && c == classify.Retryable:
					retryable++
				case e.Status == 403 && e.Type == "PERMISSION_DENIED" && c == classify.Fatal:
					fatal++
				default:
					t.Errorf("%s: %d %s classified %v; want 500 INTERNAL retryable or 403 PERMISSION_DENIED fatal", a.CustomID, e.Status, e.Type, c)
				}
				return nil
			}
			res, err := codec.Result(it, a.Body)
			if err != nil || len(res.Output) == 0 || res.Usage.InputTokens == 0 {
				t.Errorf("%s: result %+v, %v; want the output and usage of a generateContent answer", a.CustomID, res, err)
			}
			ok++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 0 {
			t.Errorf("%d requests without an answer", len(items))
		}
		if ok != st.Counts.Succeeded || retryable+fatal != st.Counts.Errored || retryable == 0 || fatal == 0 {
			t.Errorf("%d answers, %d retryable and %d fatal errors; the batch counted %+v", ok, retryable, fatal, st.Counts)
		}
	})
}

// headerLog passes requests to next and keeps, for each, its method, path
// and the value of one header.
type headerLog struct {
	next   http.RoundTripper
	name   string
	mu     sync.Mutex
	values map[string]string
}

func (h *headerLog) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.values[r.Method+" "+r.URL.Path] = r.Header.Get(h.name)
	h.mu.Unlock()
	return h.next.RoundTrip(r)
}

// TestBatchCallsCarryTheTaskHeaders: the task's headers (a gateway's
// tenant, a tracing id) go on every call of a Gemini or Anthropic batch
// (create, poll, results), as on every online call, through the client
// the codec's Endpoint gives. They were sent online only.
func TestBatchCallsCarryTheTaskHeaders(t *testing.T) {
	for _, wire := range []string{llm.ProviderGemini, llm.ProviderAnthropic} {
		t.Run(wire, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := mock.New(mock.Config{Batch: mock.BatchConfig{ProcessingTime: time.Minute}})
				log := &headerLog{next: srv.Transport(), name: "X-Tenant", values: map[string]string{}}
				lc := llm.Config{Provider: wire, Model: mock.ModelJSON, Prompt: "{{.word}}", MaxTokens: 100,
					HTTPClient: &http.Client{Transport: log}, APIKey: "k", BaseURL: "http://mock.invalid/",
					Headers: map[string]string{"X-Tenant": "team-search"}}
				if wire == llm.ProviderGemini {
					g, err := gemini.New(context.Background(), gemini.Options{APIKey: "k", Endpoint: lc.BaseURL})
					if err != nil {
						t.Fatal(err)
					}
					lc.Gemini = g
				}
				tk, err := llm.New(lc)
				if err != nil {
					t.Fatal(err)
				}
				codec := tk.Batch()
				base, key, hc := codec.Endpoint()
				var client batch.Client = batch.NewAnthropic(wire, base, key, hc, batch.Limits{})
				if wire == llm.ProviderGemini {
					if client, err = batch.NewGemini(context.Background(), wire, mock.ModelJSON, base, key, hc, batch.Limits{}); err != nil {
						t.Fatal(err)
					}
				}
				body, err := codec.Body(task.Item{Idx: 0, Fields: map[string]any{"word": "hi"}})
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				id, err := client.Submit(ctx, "job-w1-c0", []batch.Request{{CustomID: batch.CustomID(0, 1), Body: body}})
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(2 * time.Minute)
				st, err := client.Status(ctx, id)
				if err != nil || !st.Ended {
					t.Fatalf("status: %+v, %v; want ended", st, err)
				}
				answers := 0
				if err := client.Results(ctx, st, func(batch.Answer) error { answers++; return nil }); err != nil || answers != 1 {
					t.Fatalf("results: %d answers, %v; want 1", answers, err)
				}
				if len(log.values) < 2 {
					t.Fatalf("calls seen %v; want the create, the poll and the results", log.values)
				}
				for call, v := range log.values {
					if v != "team-search" {
						t.Errorf("%s carried X-Tenant %q, want the task's team-search", call, v)
					}
				}
			})
		})
	}
}

// TestAnEndedBatchsResultsAreDownloadedOnce: every batch of a job is read
// once after it ended. A Gemini batch's poll that sees it end gets its
// responses with it (the Operation carries them), and the results are
// read from that poll, not by getting the batch a second time; an
// Anthropic batch's results are one download. (An OpenAI batch's are its
// output and error files, each read once, and the latter only when a
// request failed.)
func TestAnEndedBatchsResultsAreDownloadedOnce(t *testing.T) {
	for _, tt := range []struct {
		wire     string
		perBatch int64
	}{{llm.ProviderGemini, 1}, {llm.ProviderAnthropic, 1}} {
		t.Run(tt.wire, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t, tt.wire, 300, mock.Config{Seed: 7, Faults: mock.Faults{InvalidOutput: 0.05, Server: 0.05},
					Batch: mock.BatchConfig{ProcessingTime: 2 * time.Hour}})
				defer w.close()
				sum, err := w.runner(0, nil).Run(context.Background(), w.input())
				if err != nil {
					t.Fatal(err)
				}
				if recs := w.records(); len(recs) != 300 {
					t.Fatalf("%d records, want 300", len(recs))
				}
				st := w.srv.BatchStats()
				if sum.Batches < 2 || st.Submissions != int64(sum.Batches) {
					t.Fatalf("%d batches, %d submitted; want a few waves, each submitted once", sum.Batches, st.Submissions)
				}
				if want := tt.perBatch * st.Submissions; st.ResultReads != want {
					t.Errorf("the mock sent %d batches' results for %d batches, want %d: each ended batch's results downloaded once", st.ResultReads, st.Submissions, want)
				}
			})
		})
	}
}
