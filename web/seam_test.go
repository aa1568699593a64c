package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
	"github.com/tenaxhq/tenax/worker/workertype"
)

// scriptedWorkers is a workers' database without one: the page reads it
// through Workers, so any implementation serves, not only *worker.Client.
type scriptedWorkers struct {
	jobID   string
	mu      sync.Mutex
	asked   []workertype.Decision
	stopped []string // the details of the stops asked
	// pausedBy is who paused the job ("" for none).
	pausedBy string
}

func (w *scriptedWorkers) Progress(_ context.Context, id string) (workertype.Progress, error) {
	if id != w.jobID {
		return workertype.Progress{}, workertype.ErrNotQueued
	}
	p := workertype.Progress{Waiting: 7, Running: 2, Paused: true,
		Breaker: workertype.BreakerState{Open: true, Action: "prompt", Owner: "w-7", Trips: 2}}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pausedBy != "" {
		p.Hold = &store.Pause{By: w.pausedBy, Since: time.Now()}
	}
	return p, nil
}

func (w *scriptedWorkers) Workers(context.Context) ([]workertype.Info, error) {
	return []workertype.Info{{ID: "w-7", Host: "h", Jobs: []string{w.jobID}, Concurrency: 4, Heartbeat: time.Now()}}, nil
}

func (w *scriptedWorkers) DecideTrip(_ context.Context, id string, trip int, d workertype.Decision, by string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.asked) > 0 {
		return &workertype.AnsweredError{JobID: id, Decision: w.asked[0], By: "tenax breaker"}
	}
	w.asked = append(w.asked, d)
	return nil
}

func (w *scriptedWorkers) Stop(_ context.Context, id, detail string) error {
	if id != w.jobID {
		return workertype.ErrNotQueued
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = append(w.stopped, detail)
	return nil
}

func (w *scriptedWorkers) Pause(_ context.Context, id, by string) error {
	if id != w.jobID {
		return workertype.ErrNotQueued
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pausedBy != "" {
		return &workertype.PausedError{JobID: id, By: w.pausedBy}
	}
	w.pausedBy = by
	return nil
}

func (w *scriptedWorkers) Continue(_ context.Context, id, _ string) error {
	if id != w.jobID {
		return workertype.ErrNotQueued
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pausedBy == "" {
		return workertype.ErrNotPaused
	}
	w.pausedBy = ""
	return nil
}

func (w *scriptedWorkers) Requeue(context.Context, string, workertype.RequeueOptions) (workertype.Enqueued, error) {
	return workertype.Enqueued{}, nil
}

// TestThePageReadsWorkersThroughItsInterface: the page linked River and
// pgx because it took a *worker.Client; it takes a Workers now, and any
// one shows its queue, its breaker and its workers, and takes the
// page's answer (the first wins, a later one is a conflict).
func TestThePageReadsWorkersThroughItsInterface(t *testing.T) {
	st := &memory.Store{}
	j, err := st.Create(t.Context(), store.Manifest{Name: "on-workers", Created: time.Now(), Items: 9, State: store.StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	id := j.Manifest().ID
	j.Close()
	ws := &scriptedWorkers{jobID: id}
	s := New(Config{Store: st, Workers: ws})

	p := page(t, s, id)
	for _, want := range []string{`<b id="queue-waiting">7</b>`, "tripped on worker w-7, trip 2", "<code>w-7</code>", `id="workers-continue"`} {
		if !strings.Contains(p, want) {
			t.Errorf("the page of a job on workers lacks %q:\n%s", want, p)
		}
	}
	form := url.Values{"csrf": {s.csrf}, "trip": {"2"}, "decision": {"continue"}}
	if code, body := post(s, "/jobs/"+id+"/decide", form); code != http.StatusSeeOther {
		t.Fatalf("the page's Continue: %d %s, want 303", code, body)
	}
	if code, body := post(s, "/jobs/"+id+"/decide", form); code != http.StatusConflict || !strings.Contains(body, "answered already: continue, by tenax breaker") {
		t.Errorf("a second answer: %d %s, want 409 saying who answered first", code, body)
	}
	if len(ws.asked) != 1 || ws.asked[0] != workertype.Continue {
		t.Errorf("the workers were told %v, want one continue", ws.asked)
	}
}
