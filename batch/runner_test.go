package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/batch"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/llm"
	"github.com/tenaxhq/tenax/task/llm/gemini"
	"github.com/tenaxhq/tenax/validate"
)

// schema is what mock-json's good answers satisfy and its invalid ones
// (an object without "length") do not.
const schema = `{"type":"object","required":["text","length"],"properties":{"text":{"type":"string"},"length":{"type":"integer"}}}`

// sliceSource yields items {"word": "w<i>"}.
type sliceSource struct {
	n, next int
}

func (s *sliceSource) Next() (task.Item, error) {
	if s.next >= s.n {
		return task.Item{}, io.EOF
	}
	i := s.next
	s.next++
	raw := fmt.Sprintf(`{"word":"w%d"}`, i)
	return task.Item{Idx: i, Raw: json.RawMessage(raw), Fields: map[string]any{"word": fmt.Sprintf("w%d", i)}}, nil
}

// world is a job store, a ledger and a mock provider of one wire format.
type world struct {
	t      *testing.T
	srv    *mock.Server
	task   *llm.Task
	client batch.Client
	home   string
	job    *jsonl.Job
	ledger *batch.FileLedger
	n      int
	// breakerCount is the online tail's engine.Config.BreakerCount.
	breakerCount []classify.Class
}

func newWorld(t *testing.T, wire string, n int, cfg mock.Config) *world {
	t.Helper()
	w := &world{t: t, srv: mock.New(cfg), home: t.TempDir(), n: n}
	lc := llm.Config{Provider: wire, Model: mock.ModelJSON, Prompt: "{{.word}}", Output: llm.OutputJSON, MaxTokens: 200,
		HTTPClient: w.srv.Client(), APIKey: "k", BaseURL: "http://mock.invalid/v1/",
		Prices: map[string]llm.Price{mock.ModelJSON: {InputPerMTok: 1, OutputPerMTok: 4}}}
	var err error
	if wire == llm.ProviderAnthropic || wire == llm.ProviderGemini {
		lc.BaseURL = "http://mock.invalid/"
	}
	if wire == llm.ProviderGemini {
		if lc.Gemini, err = gemini.New(context.Background(), gemini.Options{APIKey: "k", Endpoint: lc.BaseURL}); err != nil {
			t.Fatal(err)
		}
	}
	if w.task, err = llm.New(lc); err != nil {
		t.Fatal(err)
	}
	switch wire {
	case llm.ProviderAnthropic:
		w.client = batch.NewAnthropic(wire, lc.BaseURL, "k", w.srv.Client(), batch.Limits{MaxRequests: 700})
	case llm.ProviderGemini:
		if w.client, err = batch.NewGemini(context.Background(), wire, lc.Model, lc.BaseURL, "k", w.srv.Client(), batch.Limits{MaxRequests: 700}); err != nil {
			t.Fatal(err)
		}
	default:
		w.client = batch.NewOpenAI(wire, lc.BaseURL, "k", w.srv.Client(), batch.Limits{MaxRequests: 700})
	}
	w.open(false)
	return w
}

// open opens (or, first, creates) the job and its ledger.
func (w *world) open(existing bool) {
	w.t.Helper()
	st := &jsonl.Store{Home: w.home}
	var j store.Job
	var err error
	if existing {
		j, err = st.Open(context.Background(), "job_batch")
	} else {
		j, err = st.Create(context.Background(), store.Manifest{ID: "job_batch", Created: time.Now(), Items: w.n, State: store.StateRunning})
	}
	if err != nil {
		w.t.Fatal(err)
	}
	w.job = j.(*jsonl.Job)
	if w.ledger, err = batch.OpenFileLedger(w.job.Dir()); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) close() {
	w.t.Helper()
	if err := w.job.Close(); err != nil {
		w.t.Fatal(err)
	}
	w.ledger.Close()
}

// runner returns a Runner over the world, with an online tail of tail.
func (w *world) runner(tail int, mod func(*batch.Config)) *batch.Runner {
	w.t.Helper()
	v, err := validate.JSONSchema([]byte(schema), "schema.json")
	if err != nil {
		w.t.Fatal(err)
	}
	var cfg batch.Config
	cfg = batch.Config{
		Client: w.client, Codec: w.task.Batch(), Provider: "mock", Ledger: w.ledger,
		Retry: retry.Policy{MaxAttempts: 5}, Ops: retry.Policy{MaxAttempts: 3, Backoff: retry.Backoff{Base: time.Second, Jitter: retry.JitterNone}},
		Validator: v, Heal: heal.Budget{MaxAttempts: 8, MaxErrorAttempts: 5},
		PollMin: time.Minute, PollMax: 10 * time.Minute, OnlineTail: tail, Total: w.n,
		// The online tail runs under the job's policies, as job.runBatch
		// wires it: cfg is read when the tail runs, after mod.
		Online: func(ctx context.Context, items []task.Item, carried map[int]*engine.Carried, j batch.Checkpoint) (engine.Summary, error) {
			e := engine.New(engine.Config{Validator: v, Heal: cfg.Heal, Retry: cfg.Retry, Carried: carried, BreakerCount: w.breakerCount, Concurrency: 4}, w.task, j)
			i := 0
			return e.Run(ctx, engine.SourceFunc(func() (task.Item, error) {
				if i == len(items) {
					return task.Item{}, io.EOF
				}
				i++
				return items[i-1], nil
			}))
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	return batch.New(cfg)
}

func (w *world) input() batch.Input {
	outcomes, err := w.job.Outcomes(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	return batch.Input{
		Open:  func() (batch.Source, error) { return &sliceSource{n: w.n}, nil },
		Want:  func(idx int) bool { return outcomes.Get(idx) == store.Pending },
		Job:   w.job,
		JobID: w.job.Manifest().ID,
	}
}

// records returns the latest record of every idx.
func (w *world) records() map[int]store.Record {
	w.t.Helper()
	out := map[int]store.Record{}
	if err := w.job.Scan(context.Background(), func(r store.Record) error { out[r.Idx] = r; return nil }); err != nil {
		w.t.Fatal(err)
	}
	return out
}

func TestEveryItemEndsValidInFewWavesDespiteInvalidAnswersAndErroredRequests(t *testing.T) {
	for _, wire := range []string{llm.ProviderOpenAI, llm.ProviderAnthropic} {
		t.Run(wire, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t, wire, 2000, mock.Config{Seed: 11, Faults: mock.Faults{InvalidOutput: 0.10, Server: 0.05},
					Batch: mock.BatchConfig{ProcessingTime: 2 * time.Hour}})
				defer w.close()
				sum, err := w.runner(50, nil).Run(context.Background(), w.input())
				if err != nil {
					t.Fatal(err)
				}
				recs := w.records()
				if len(recs) != 2000 {
					t.Fatalf("%d records, want 2000", len(recs))
				}
				healed, retried := 0, 0
				for idx, r := range recs {
					if r.Failed() {
						t.Fatalf("item %d failed: %s", idx, r.Error)
					}
					var out struct {
						Text   string `json:"text"`
						Length int    `json:"length"`
					}
					if err := json.Unmarshal(r.Output, &out); err != nil || out.Text != fmt.Sprintf("w%d", idx) {
						t.Fatalf("item %d output %s is not the answer to its prompt", idx, r.Output)
					}
					if r.HealAttempts > 0 {
						healed++
					}
					if r.Attempts > r.GenerationAttempts {
						retried++
					}
				}
				if sum.Waves > 4 {
					t.Errorf("%d waves, want at most 4", sum.Waves)
				}
				if healed < 100 || retried < 50 {
					t.Errorf("%d items healed and %d retried; the faults should have made about 200 and 100", healed, retried)
				}
				if sum.BatchCostUSD <= 0 || sum.FullCostUSD != 2*sum.BatchCostUSD {
					t.Errorf("cost $%.6f at the batch price, $%.6f online: want half the online price", sum.BatchCostUSD, sum.FullCostUSD)
				}
				t.Logf("%s: %d waves, %d batches, %d requests; %d healed, %d retried; cost $%.6f (online $%.6f)", wire, sum.Waves, sum.Batches, sum.Requests, healed, retried, sum.CostUSD, sum.FullCostUSD)
			})
		})
	}
}

func TestResumeRepollsTheBatchesOfACrashedWaveAndNeverResubmitsThem(t *testing.T) {
	for _, wire := range []string{llm.ProviderOpenAI, llm.ProviderAnthropic} {
		t.Run(wire, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t, wire, 1000, mock.Config{Seed: 5, Faults: mock.Faults{InvalidOutput: 0.10, Server: 0.05},
					Batch: mock.BatchConfig{ProcessingTime: 2 * time.Hour}})
				ctx, crash := context.WithCancel(context.Background())
				first := w.runner(50, func(c *batch.Config) {
					c.OnProgress = func(p batch.Progress) {
						if p.Wave == 1 && p.Counts.Done() > 0 {
							crash() // mid-polling, some requests done
						}
					}
				})
				sum, err := first.Run(ctx, w.input())
				if err != nil {
					t.Fatal(err)
				}
				if sum.Stop != engine.StopSignal || len(w.records()) != 0 {
					t.Fatalf("the crashed run stopped with %v and %d records; want a stop while polling with none", sum.Stop, len(w.records()))
				}
				before := w.srv.BatchStats()
				if before.Submissions != 2 || before.Requests != 1000 {
					t.Fatalf("before the crash: %+v; want the 1000 items in 2 batches of at most 700", before)
				}
				w.close()

				w.open(true)
				defer w.close()
				sum, err = w.runner(50, nil).Run(context.Background(), w.input())
				if err != nil {
					t.Fatal(err)
				}
				after := w.srv.BatchStats()
				if sum.Repolled != 2 {
					t.Errorf("the resume re-polled %d batches, want the 2 of wave 1", sum.Repolled)
				}
				if resubmitted := after.Requests - before.Requests; resubmitted >= 1000*0.2 {
					t.Errorf("the resume submitted %d more requests; only wave 1's retries and re-asks (about 150) should go", resubmitted)
				}
				recs := w.records()
				for idx := range 1000 {
					if r, ok := recs[idx]; !ok || r.Failed() {
						t.Fatalf("item %d after the resume: %+v", idx, r)
					}
				}
			})
		})
	}
}

func TestAnExpiredBatchsRequestsGoIntoTheNextWave(t *testing.T) {
	for _, wire := range []string{llm.ProviderOpenAI, llm.ProviderAnthropic} {
		t.Run(wire, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t, wire, 1000, mock.Config{Batch: mock.BatchConfig{ProcessingTime: time.Hour, ExpireFirst: 1}})
				defer w.close()
				sum, err := w.runner(0, nil).Run(context.Background(), w.input())
				if err != nil {
					t.Fatal(err)
				}
				recs := w.records()
				// The first batch held items 0-699; its window closed with
				// half of them processed.
				for idx := range 1000 {
					r := recs[idx]
					if r.Failed() {
						t.Fatalf("item %d failed: %s", idx, r.Error)
					}
					want := 1
					if idx >= 350 && idx < 700 {
						want = 2
					}
					if r.Attempts != want || r.GenerationAttempts != 1 {
						t.Fatalf("item %d: %d attempts and %d generations; want %d attempts (one per wave) and one generation", idx, r.Attempts, r.GenerationAttempts, want)
					}
				}
				entries, err := w.ledger.Entries(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				var wave2 []string
				for _, e := range entries {
					if e.Kind == batch.KindSubmitted && e.Wave == 2 {
						wave2 = append(wave2, e.CustomIDs...)
					}
				}
				if len(wave2) != 350 || wave2[0] != batch.CustomID(350, 2) {
					t.Errorf("wave 2 submitted %d requests starting %v; want the 350 expired ones from item 350", len(wave2), wave2[:min(1, len(wave2))])
				}
				if sum.Waves != 2 {
					t.Errorf("%d waves, want 2", sum.Waves)
				}
			})
		})
	}
}

// answering is an Operator that answers the breaker's question from a list.
type answering struct {
	answers []engine.TripDecision
	reports []engine.TripReport
}

func (a *answering) Trip(_ context.Context, r engine.TripReport) engine.TripDecision {
	a.reports = append(a.reports, r)
	d := a.answers[0]
	a.answers = a.answers[1:]
	return d
}

func (a *answering) CheckIn(context.Context, engine.CheckIn) bool { return true }

func TestAWaveMostlyFailingWithOneErrorTripsTheBreakerAndLeavesThoseItemsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, llm.ProviderAnthropic, 200, mock.Config{Seed: 2, Faults: mock.Faults{Auth: 0.7}})
		defer w.close()
		ask := &answering{answers: []engine.TripDecision{engine.TripContinue, engine.TripAbortRun}}
		sum, err := w.runner(0, func(c *batch.Config) {
			c.OnTrip, c.Operator = engine.TripPrompt, ask
		}).Run(context.Background(), w.input())
		if err != nil {
			t.Fatal(err)
		}
		if len(ask.reports) != 2 || sum.Stop != engine.StopOperator {
			t.Fatalf("asked %d times, stopped with %v; want two trips (continue, then abort) and an operator stop", len(ask.reports), sum.Stop)
		}
		rep := ask.reports[0]
		if rep.Last == nil || rep.Last.Decision.Class.String() != "fatal" {
			t.Fatalf("the report's last failure is %+v, want the fatal 401", rep.Last)
		}
		recs := w.records()
		for idx, r := range recs {
			if r.Failed() {
				t.Errorf("item %d was recorded failed (%s); the tripped items must stay pending", idx, r.Error)
			}
		}
		if len(recs) < 60 || len(recs) > 150 {
			t.Errorf("%d of 200 items succeeded; with 70%% of requests failing twice about 90 should", len(recs))
		}
		entries, _ := w.ledger.Entries(context.Background())
		last := entries[len(entries)-2]
		if last.Kind != batch.KindWave || last.Wave != 3 || len(last.Items) != 200-len(recs) {
			t.Errorf("the ledger's next wave is %+v; want wave 3 holding the %d pending items for a resume", last.Kind, 200-len(recs))
		}
	})
}

func TestCanceledBatchReportsItsUnprocessedRequestsAsCanceled(t *testing.T) {
	for _, wire := range []string{llm.ProviderOpenAI, llm.ProviderAnthropic} {
		t.Run(wire, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t, wire, 10, mock.Config{Batch: mock.BatchConfig{ProcessingTime: time.Hour}})
				defer w.close()
				ctx := context.Background()
				codec := w.task.Batch()
				var reqs []batch.Request
				src := &sliceSource{n: 10}
				for {
					it, err := src.Next()
					if err == io.EOF {
						break
					}
					body, err := codec.Body(it)
					if err != nil {
						t.Fatal(err)
					}
					reqs = append(reqs, batch.Request{CustomID: batch.CustomID(it.Idx, 1), Body: body})
				}
				id, err := w.client.Submit(ctx, "w1-c1", reqs)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(24 * time.Minute) // 4 of 10 requests done
				if err := w.client.Cancel(ctx, id); err != nil {
					t.Fatal(err)
				}
				st, err := w.client.Status(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if !st.Ended || st.Counts.Total != 10 {
					t.Fatalf("after cancel: %+v; want an ended batch of 10", st)
				}
				kinds := map[string]int{}
				err = w.client.Results(ctx, st, func(a batch.Answer) error {
					switch {
					case a.Unprocessed != "":
						kinds[a.Unprocessed]++
					case a.Body != nil:
						kinds["answered"]++
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if kinds["answered"] != 4 || kinds["canceled"] != 6 {
					t.Errorf("results %v; want 4 answered and 6 canceled", kinds)
				}
			})
		})
	}
}

// The online tail started every item's heal budget and retry streak
// afresh: an item that had spent re-asks (or failed waves) in batches got
// the whole budget again online.
func TestOnlineTailContinuesTheBudgetsSpentInWaves(t *testing.T) {
	tests := []struct {
		name   string
		faults mock.Faults
		mod    func(*batch.Config)
		// spent reads what the budget counts from a failed record.
		spent func(store.Record) int
		limit int
	}{
		{"heal budget", mock.Faults{InvalidOutput: 1},
			func(c *batch.Config) { c.Heal = heal.Budget{MaxAttempts: 3} },
			func(r store.Record) int { return r.HealAttempts }, 3},
		{"retry streak", mock.Faults{Server: 1},
			func(c *batch.Config) { c.Retry = retry.Policy{MaxAttempts: 3} },
			func(r store.Record) int { return r.Attempts }, 3},
	}
	for _, tt := range tests {
		for _, wire := range []string{llm.ProviderOpenAI, llm.ProviderAnthropic} {
			t.Run(tt.name+"/"+wire, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					w := newWorld(t, wire, 20, mock.Config{Seed: 5, Faults: tt.faults, Batch: mock.BatchConfig{ProcessingTime: time.Hour}})
					defer w.close()
					w.breakerCount = []classify.Class{} // every call fails alike: keep the breaker out of it
					// Wave 1 is a batch; every later wave (20 items at most) goes online.
					sum, err := w.runner(20, func(c *batch.Config) {
						tt.mod(c)
						c.TripShare = 2
					}).Run(context.Background(), w.input())
					if err != nil {
						t.Fatal(err)
					}
					if sum.Batches != 1 {
						t.Fatalf("%d batches; want wave 1 in a batch and the rest online", sum.Batches)
					}
					recs := w.records()
					if len(recs) != 20 {
						t.Fatalf("%d records, want 20", len(recs))
					}
					for idx, r := range recs {
						if !r.Failed() {
							t.Fatalf("item %d succeeded though every answer fails", idx)
						}
						if got := tt.spent(r); got != tt.limit {
							t.Errorf("item %d spent %d in all (wave 1 and online), want the budget of %d: %s", idx, got, tt.limit, r.Error)
						}
					}
				})
			})
		}
	}
}

// crashingLedger is a ledger whose process dies when the n-th submitted
// entry is about to be written: the batch exists at the provider, its id
// is lost.
type crashingLedger struct {
	batch.Ledger
	n, seen int
}

var errCrashed = errors.New("crashed before the ledger write")

func (l *crashingLedger) Append(ctx context.Context, e batch.Entry) error {
	if e.Kind == batch.KindSubmitted {
		if l.seen++; l.seen == l.n {
			return errCrashed
		}
	}
	return l.Ledger.Append(ctx, e)
}

// A crash between a batch's creation and the fsync of its id made the
// resume submit the batch's requests again (billed twice). OpenAI's
// batches are found by the key in their metadata and adopted.
func TestResumeAdoptsTheBatchCreatedBeforeACrashInsteadOfSubmittingItAgain(t *testing.T) {
	tests := []struct {
		wire string
		// submissions is what the mock counts for wave 1 in all.
		submissions int64
	}{
		{llm.ProviderOpenAI, 2},
		// Gemini's batches are found by their display name.
		{llm.ProviderGemini, 2},
		// Anthropic's message batches carry no metadata: the lost batch
		// cannot be told from another job's, and its requests go again
		// (docs/batch.md, "Crash safety and resume").
		{llm.ProviderAnthropic, 3},
	}
	for _, tt := range tests {
		t.Run(tt.wire, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t, tt.wire, 1000, mock.Config{Seed: 5, Batch: mock.BatchConfig{ProcessingTime: 2 * time.Hour}})
				// The second of wave 1's two batches (700 + 300) is created, and the
				// process dies before its id is written.
				_, err := w.runner(0, func(c *batch.Config) {
					c.Ledger = &crashingLedger{Ledger: c.Ledger, n: 2}
				}).Run(context.Background(), w.input())
				if !errors.Is(err, errCrashed) {
					t.Fatalf("the first run ended with %v, want the crash", err)
				}
				if st := w.srv.BatchStats(); st.Submissions != 2 {
					t.Fatalf("before the crash the mock saw %d submissions, want 2", st.Submissions)
				}
				w.close()

				w.open(true)
				defer w.close()
				sum, err := w.runner(0, nil).Run(context.Background(), w.input())
				if err != nil {
					t.Fatal(err)
				}
				if st := w.srv.BatchStats(); st.Submissions != tt.submissions {
					t.Errorf("the mock counted %d submissions in all, want %d", st.Submissions, tt.submissions)
				}
				if tt.wire != llm.ProviderAnthropic && sum.Repolled != 2 {
					t.Errorf("the resume polled %d batches of the crashed run, want both (the one found by its key)", sum.Repolled)
				}
				recs := w.records()
				for idx := range 1000 {
					if r, ok := recs[idx]; !ok || r.Failed() {
						t.Fatalf("item %d after the resume: %+v", idx, r)
					}
				}
			})
		})
	}
}

// lostAnswer is a client whose first create works at the provider but
// whose answer is lost (a timeout): the error is retryable.
type lostAnswer struct {
	*batch.OpenAI
	lost bool
}

func (c *lostAnswer) Submit(ctx context.Context, key string, reqs []batch.Request) (string, error) {
	id, err := c.OpenAI.Submit(ctx, key, reqs)
	if err == nil && !c.lost {
		c.lost = true
		return "", &batch.OpError{Op: "create", Err: fmt.Errorf("reading the answer: %w", context.DeadlineExceeded)}
	}
	return id, err
}

// A create whose answer was lost was tried again blindly: the provider
// had two batches of the same requests.
func TestCreateTriedAgainAfterALostAnswerFindsTheBatchItMade(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, llm.ProviderOpenAI, 100, mock.Config{Seed: 5, Batch: mock.BatchConfig{ProcessingTime: time.Hour}})
		defer w.close()
		if _, err := w.runner(0, func(c *batch.Config) {
			c.Client = &lostAnswer{OpenAI: w.client.(*batch.OpenAI)}
		}).Run(context.Background(), w.input()); err != nil {
			t.Fatal(err)
		}
		if st := w.srv.BatchStats(); st.Submissions != 1 {
			t.Errorf("the mock counted %d submissions, want 1: the retry should find the batch by its key", st.Submissions)
		}
		if n := len(w.records()); n != 100 {
			t.Errorf("%d records, want 100", n)
		}
	})
}

func TestWavesStayUnderTheEnqueuedTokenCapAndDeferredItemsSpendNoAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, llm.ProviderOpenAI, 100, mock.Config{Seed: 5, Batch: mock.BatchConfig{ProcessingTime: time.Hour}})
		defer w.close()
		// Every item's request is estimated alike ("w10" to "w99"; the first
		// ten are a token shorter at most): a cap of 30 of them.
		est := w.task.EstimateTokens(task.Item{Idx: 50, Fields: map[string]any{"word": "w50"}})
		sum, err := w.runner(0, func(c *batch.Config) { c.MaxEnqueuedTokens = 30 * est }).Run(context.Background(), w.input())
		if err != nil {
			t.Fatal(err)
		}
		st := w.srv.BatchStats()
		if st.Requests != 100 || st.Submissions < 4 || sum.Waves != int(st.Submissions) {
			t.Errorf("%d requests in %d batches over %d waves; want the 100 items in waves of at most 30, one batch each", st.Requests, st.Submissions, sum.Waves)
		}
		if sum.Deferred == 0 {
			t.Error("no item was deferred")
		}
		recs := w.records()
		if len(recs) != 100 {
			t.Fatalf("%d records, want 100", len(recs))
		}
		for idx, r := range recs {
			if r.Failed() || r.Attempts != 1 {
				t.Errorf("item %d: %d attempts, error %q; waiting for a later wave spends no attempt", idx, r.Attempts, r.Error)
			}
		}
	})
}
