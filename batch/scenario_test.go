package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/batch"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/engine/enginetest"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
	"github.com/tenaxhq/tenax/task"
)

// fakeClient is a provider's batch API that answers each request with
// answer and notes when each batch was submitted.
type fakeClient struct {
	answer func(q batch.Request) batch.Answer
	// processing is how long a batch takes to end.
	processing time.Duration
	mu         sync.Mutex
	reqs       map[string][]batch.Request
	submits    []time.Time
}

func (c *fakeClient) Submit(_ context.Context, _ string, reqs []batch.Request) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.submits = append(c.submits, time.Now())
	id := fmt.Sprintf("batch_%d", len(c.submits))
	if c.reqs == nil {
		c.reqs = map[string][]batch.Request{}
	}
	c.reqs[id] = reqs
	return id, nil
}

func (c *fakeClient) Status(_ context.Context, id string) (batch.Status, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.reqs[id])
	var i int
	fmt.Sscanf(id, "batch_%d", &i)
	if time.Since(c.submits[i-1]) < c.processing {
		return batch.Status{ID: id, State: "in_progress", Counts: batch.Counts{Total: n, Processing: n}}, nil
	}
	return batch.Status{ID: id, State: "ended", Ended: true, Counts: batch.Counts{Total: n, Succeeded: n}}, nil
}

func (c *fakeClient) Cancel(context.Context, string) error { return nil }

func (c *fakeClient) Results(_ context.Context, st batch.Status, fn func(batch.Answer) error) error {
	c.mu.Lock()
	reqs := c.reqs[st.ID]
	c.mu.Unlock()
	for _, q := range reqs {
		a := c.answer(q)
		a.CustomID = q.CustomID
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

func (c *fakeClient) Limits() batch.Limits { return batch.Limits{MaxRequests: 100, MaxBytes: 1 << 20} }

// scriptClient answers every request by the scenarios' script: item
// idx's k-th request gets its k-th answer.
func scriptClient(script *enginetest.Script) *fakeClient {
	return &fakeClient{answer: func(q batch.Request) batch.Answer {
		idx, _, err := batch.ParseCustomID(q.CustomID)
		if err != nil {
			panic(err)
		}
		a, call := script.Next(idx)
		_, err = a.Result(call)
		var outErr *task.OutputError
		if err == nil || errors.As(err, &outErr) {
			// Outputs, usable or not, are bodies the codec reads.
			body, _ := json.Marshal(scriptBody{Answer: a, Call: call})
			return batch.Answer{Body: body}
		}
		return batch.Answer{Err: err}
	}}
}

// scriptBody is a scripted answer's body.
type scriptBody struct {
	Answer enginetest.Answer `json:"answer"`
	Call   int               `json:"call"`
}

// scriptCodec reads a scripted body as the task's call would have
// returned it.
type scriptCodec struct{}

func (scriptCodec) Body(it task.Item) (json.RawMessage, error) {
	return json.Marshal(map[string]any{"idx": it.Idx, "feedback": it.Feedback})
}

func (scriptCodec) Result(_ task.Item, body json.RawMessage) (task.Result, error) {
	var b scriptBody
	if err := json.Unmarshal(body, &b); err != nil {
		return task.Result{}, err
	}
	return b.Answer.Result(b.Call)
}

func (scriptCodec) Cached(task.Item) (task.Result, bool) { return task.Result{}, false }

// TestSharedScenariosInWaves runs the per-item core's shared scenarios
// (enginetest) through batch waves, and through waves with an online tail
// that continues them in the engine: the same records as the local run.
func TestSharedScenariosInWaves(t *testing.T) {
	for _, tail := range []int{0, 100} {
		name := "waves"
		if tail > 0 {
			name = "wave_then_online_tail"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				scenarios := enginetest.Scenarios()
				script := &enginetest.Script{Scenarios: scenarios}
				cfg := batch.Config{Client: scriptClient(script), Codec: scriptCodec{}, Provider: "mock", OnlineTail: tail}
				sum, recs := scenarioWaves(t, scenarios, cfg, engine.Config{}, script)
				if tail > 0 && sum.Batches != 1 {
					t.Errorf("%d batches; want wave 1 in a batch, the rest online", sum.Batches)
				}
				enginetest.Check(t, name, scenarios, recs)
				enginetest.Same(t, name, scenarios, enginetest.Local(t, scenarios), recs)
			})
		})
	}
}

// TestRoutedScenariosInWaves runs the routed scenarios, one per fallback
// kind, through batch waves over routes a and b, and through waves whose
// online tail continues them in the engine: each item's next wave goes
// where its next online call would (engine.Routes), so the records are
// the local engine's, whole, tries and fallbacks included.
func TestRoutedScenariosInWaves(t *testing.T) {
	for _, tail := range []int{0, 100} {
		name := "routed_waves"
		if tail > 0 {
			name = "routed_wave_then_online_tail"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				scenarios := enginetest.RoutedScenarios()
				a, b := enginetest.RouteScripts(scenarios)
				routes := enginetest.Routes(a, b)
				cfg := batch.Config{
					Routes: []batch.Route{
						{Route: routes[0], Client: scriptClient(a), Codec: scriptCodec{}},
						{Route: routes[1], Client: scriptClient(b), Codec: scriptCodec{}},
					},
					Fallbacks: enginetest.Fallbacks(), OnlineTail: tail,
				}
				_, recs := scenarioWaves(t, scenarios, cfg, engine.Config{Routes: routes, Fallbacks: enginetest.Fallbacks()}, a)
				enginetest.Check(t, name, scenarios, recs)
				enginetest.Same(t, name, scenarios, enginetest.LocalRouted(t, scenarios), recs)
			})
		})
	}
}

// scenarioWaves runs the scenarios' items through batch waves of cfg,
// under the scenarios' retry policy, heal budget and validator, at the
// online price (so that costs compare with the local engine's); the
// online tail is an engine of online, so configured, calling tk. It
// returns how the run ended and the records by idx.
func scenarioWaves(t *testing.T, scenarios []enginetest.Scenario, cfg batch.Config, online engine.Config, tk task.Task) (batch.Summary, map[int]store.Record) {
	t.Helper()
	var st memory.Store
	j, err := st.Create(context.Background(), store.Manifest{ID: "scenarios", Created: time.Now(), Items: len(scenarios), State: store.StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := batch.OpenFileLedger(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	items := enginetest.Items(scenarios)
	source := func(items []task.Item) engine.SourceFunc {
		i := 0
		return func() (task.Item, error) {
			if i == len(items) {
				return task.Item{}, io.EOF
			}
			i++
			return items[i-1], nil
		}
	}
	cfg.Ledger, cfg.Retry, cfg.Ops = ledger, enginetest.Policy(), enginetest.Policy()
	cfg.Validator, cfg.Heal, cfg.Discount = enginetest.Validator{}, enginetest.Budget(), 1
	cfg.PollMin, cfg.TripShare, cfg.Total = time.Second, 2, len(scenarios)
	cfg.Online = func(ctx context.Context, items []task.Item, carried map[int]*engine.Carried, j batch.Checkpoint) (engine.Summary, error) {
		ec := online
		ec.Validator, ec.Heal, ec.Retry = enginetest.Validator{}, enginetest.Budget(), enginetest.Policy()
		ec.Carried, ec.BreakerCount, ec.Concurrency = carried, []classify.Class{}, 4
		return engine.New(ec, tk, j).Run(ctx, source(items))
	}
	in := batch.Input{
		Open: func() (batch.Source, error) { return source(items), nil },
		Want: func(int) bool { return true }, Job: j, JobID: j.Manifest().ID,
	}
	sum, err := batch.New(cfg).Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	recs := map[int]store.Record{}
	if err := j.Scan(context.Background(), func(r store.Record) error { recs[r.Idx] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	return sum, recs
}

// runFake runs n items through waves of c under cfg's retry policy.
func runFake(t *testing.T, c *fakeClient, n int, policy retry.Policy) (batch.Summary, map[int]store.Record) {
	t.Helper()
	var st memory.Store
	j, err := st.Create(context.Background(), store.Manifest{ID: "fake", Created: time.Now(), Items: n, State: store.StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := batch.OpenFileLedger(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	cfg := batch.Config{
		Client: c, Codec: scriptCodec{}, Provider: "mock", Ledger: ledger,
		Retry: policy, Ops: enginetest.Policy(), Validator: enginetest.Validator{},
		PollMin: time.Minute, PollMax: time.Hour, TripShare: 2, Total: n,
	}
	in := batch.Input{
		Open:  func() (batch.Source, error) { return &sliceSource{n: n}, nil },
		Want:  func(int) bool { return true },
		Job:   j,
		JobID: j.Manifest().ID,
	}
	sum, err := batch.New(cfg).Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	recs := map[int]store.Record{}
	if err := j.Scan(context.Background(), func(r store.Record) error { recs[r.Idx] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	return sum, recs
}

// validBody is the body of an answer the validator accepts.
func validBody() json.RawMessage {
	b, _ := json.Marshal(scriptBody{Answer: enginetest.Valid, Call: 1})
	return b
}

var errOverloaded = classify.WithClass(errors.New("503 overloaded"), classify.Retryable, "test")

// Batch waves never read retry.max_elapsed: an item kept failing until
// retry.max_attempts waves were spent, however long they took.
func TestWavesStopRetryingAtMaxElapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every request fails retryably; a wave takes about half an hour.
		c := &fakeClient{processing: 30 * time.Minute, answer: func(batch.Request) batch.Answer { return batch.Answer{Err: errOverloaded} }}
		policy := retry.Policy{MaxAttempts: 10, MaxElapsed: time.Hour, Backoff: retry.Backoff{Base: time.Second, Jitter: retry.JitterNone}}
		_, recs := runFake(t, c, 3, policy)
		for idx := range 3 {
			r := recs[idx]
			// Wave 2 ends past 31 minutes twice over: its retry would wait
			// past the hour.
			if !r.Failed() || r.Class != classify.Retryable || r.Attempts != 2 {
				t.Errorf("item %d: failed=%t class %s after %d waves; want retryable after 2 (max_elapsed 1h, a wave ~31m)", idx, r.Failed(), r.Class, r.Attempts)
			}
		}
		if len(c.submits) != 2 {
			t.Errorf("%d waves submitted; want 2", len(c.submits))
		}
	})
}

// A retried item went into the next wave at once: batch never waited out
// a retry's delay, a server's hint, or retry.max_hint's cap on it.
func TestNextWaveWaitsOutTheRetryDelay(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		policy retry.Policy
		wait   time.Duration
	}{
		{"backoff", errOverloaded, retry.Policy{Backoff: retry.Backoff{Base: 5 * time.Second, Jitter: retry.JitterNone}}, 5 * time.Second},
		{"hint", retry.After(30*time.Second, errOverloaded), retry.Policy{}, 30 * time.Second},
		{"hint_capped_by_max_hint", retry.After(30*time.Second, errOverloaded), retry.Policy{MaxHint: 10 * time.Second}, 10 * time.Second},
		{"hint_ignored_by_negative_max_hint", retry.After(30*time.Second, errOverloaded), retry.Policy{MaxHint: -1, Backoff: retry.Backoff{Base: 2 * time.Second, Jitter: retry.JitterNone}}, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls sync.Map
				c := &fakeClient{answer: func(q batch.Request) batch.Answer {
					if _, again := calls.LoadOrStore(q.CustomID[:strings.IndexByte(q.CustomID, '-')], true); again {
						return batch.Answer{Body: validBody()}
					}
					return batch.Answer{Err: tt.err}
				}}
				_, recs := runFake(t, c, 2, tt.policy)
				for idx, r := range recs {
					if r.Failed() || r.Attempts != 2 {
						t.Errorf("item %d: failed=%t after %d waves (%s); want success in wave 2", idx, r.Failed(), r.Attempts, r.Error)
					}
				}
				if len(c.submits) != 2 {
					t.Fatalf("%d waves; want 2", len(c.submits))
				}
				if got := c.submits[1].Sub(c.submits[0]); got != tt.wait {
					t.Errorf("wave 2 went %v after wave 1's answers; want %v", got, tt.wait)
				}
			})
		})
	}
}

// TestResumedWaveContinuesItsFailuresAndRetryDelay: a wave read back from
// the ledger continues each item's retry streak (the ledger's "streak")
// and waits out the retry delay its answers were given (retry_at).
func TestResumedWaveContinuesItsFailuresAndRetryDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var st memory.Store
		j, err := st.Create(context.Background(), store.Manifest{ID: "resumed", Created: time.Now(), Items: 2, State: store.StateRunning})
		if err != nil {
			t.Fatal(err)
		}
		ledger, err := batch.OpenFileLedger(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer ledger.Close()
		start := time.Now()
		// Wave 1 ended with item 0's second failure in a row and a 20s
		// delay before its next request; the run stopped there.
		wave := batch.Entry{Kind: batch.KindWave, Wave: 2, Items: []batch.ItemState{
			{Idx: 0, Calls: 2, Failures: 2, Started: start, RetryAt: start.Add(20 * time.Second)},
		}}
		if err := ledger.Append(context.Background(), wave); err != nil {
			t.Fatal(err)
		}
		c := &fakeClient{answer: func(batch.Request) batch.Answer { return batch.Answer{Err: errOverloaded} }}
		cfg := batch.Config{
			Client: c, Codec: scriptCodec{}, Provider: "mock", Ledger: ledger,
			Retry: retry.Policy{MaxAttempts: 3}, Ops: enginetest.Policy(), Validator: enginetest.Validator{},
			PollMin: time.Minute, TripShare: 2, Total: 2,
		}
		in := batch.Input{Open: func() (batch.Source, error) { return &sliceSource{n: 2}, nil }, Want: func(int) bool { return true }, Job: j, JobID: j.Manifest().ID}
		if _, err := batch.New(cfg).Run(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		if len(c.submits) != 1 || c.submits[0].Sub(start) != 20*time.Second {
			t.Fatalf("submitted at %v; want one wave, 20s after the start", c.submits)
		}
		var rec store.Record
		if err := j.Scan(context.Background(), func(r store.Record) error { rec = r; return nil }); err != nil {
			t.Fatal(err)
		}
		if !rec.Failed() || rec.Class != classify.Retryable || rec.Attempts != 3 {
			t.Errorf("item 0: failed=%t class %s after %d calls; want retryable after 3 (max_attempts 3, 2 spent before)", rec.Failed(), rec.Class, rec.Attempts)
		}
	})
}

// TestRunRefusesAnInputWithoutAJobID: the job id keys the job's batches at
// the provider, where a resume looks a lost one up; without it two jobs'
// keys would match, and a resume could adopt another job's batch.
func TestRunRefusesAnInputWithoutAJobID(t *testing.T) {
	var st memory.Store
	j, err := st.Create(context.Background(), store.Manifest{ID: "unnamed", Created: time.Now(), Items: 2, State: store.StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := batch.OpenFileLedger(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	c := &fakeClient{answer: func(batch.Request) batch.Answer { return batch.Answer{Err: errOverloaded} }}
	cfg := batch.Config{Client: c, Codec: scriptCodec{}, Provider: "mock", Ledger: ledger, Ops: enginetest.Policy(), Total: 2}
	in := batch.Input{Open: func() (batch.Source, error) { return &sliceSource{n: 2}, nil }, Want: func(int) bool { return true }, Job: j}
	_, err = batch.New(cfg).Run(context.Background(), in)
	if err == nil || !strings.Contains(err.Error(), "JobID") {
		t.Fatalf("Run without a JobID: error %v, want one naming JobID", err)
	}
	if len(c.submits) != 0 {
		t.Errorf("Run without a JobID submitted %d batch(es), want none", len(c.submits))
	}
}
