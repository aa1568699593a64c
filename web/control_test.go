package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
	"github.com/tenaxhq/tenax/task"
)

// heldTask blocks every call until the channel it finds at its start
// closes, so that a test decides when the calls in flight end.
type heldTask struct {
	started atomic.Int64
	release atomic.Pointer[chan struct{}]
}

func (h *heldTask) Run(ctx context.Context, _ task.Item) (task.Result, error) {
	h.started.Add(1)
	select {
	case <-*h.release.Load():
	case <-ctx.Done():
		return task.Result{}, ctx.Err()
	}
	return task.Result{Output: []byte(`{"ok":true}`)}, nil
}

func (h *heldTask) hold() chan struct{} {
	ch := make(chan struct{})
	h.release.Store(&ch)
	return ch
}

func sourceOf(n int) engine.Source {
	i := 0
	return engine.SourceFunc(func() (task.Item, error) {
		if i >= n {
			return task.Item{}, io.EOF
		}
		it := task.Item{Idx: i, Raw: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
		i++
		return it, nil
	})
}

func postControl(s *Server, id string, form url.Values) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/jobs/"+id+"/control", strings.NewReader(form.Encode()))
	req.Host = "127.0.0.1:1"
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

func TestThePagePausesContinuesAndStopsTheRun(t *testing.T) {
	st, id := newJob(t, 10)
	var mem memory.Store
	cp, err := mem.Create(t.Context(), store.Manifest{ID: id, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	tk := &heldTask{}
	first := tk.hold()
	m := NewMonitor(prometheus.NewRegistry())
	e := engine.New(engine.Config{Concurrency: 2, Total: 10, OnEvent: m.Observe}, tk, cp)
	m.Start(id, e.Stats, nil)
	m.Attach(e)
	s := New(Config{Store: st, Monitor: m, Operator: "alice on the web page"})
	done := make(chan engine.Summary, 1)
	go func() {
		sum, _ := e.Run(context.Background(), sourceOf(10))
		done <- sum
	}()
	waitFor(t, "2 calls in flight", func() bool { return tk.started.Load() == 2 })

	for _, c := range []struct {
		name string
		form url.Values
		want int
	}{
		{"no form secret", url.Values{"do": {"pause"}}, http.StatusForbidden},
		{"a wrong form secret", url.Values{"do": {"pause"}, "csrf": {"0000"}}, http.StatusForbidden},
		{"no such action", url.Values{"do": {"explode"}, "csrf": {s.csrf}}, http.StatusBadRequest},
		{"continue when not paused", url.Values{"do": {"continue"}, "csrf": {s.csrf}}, http.StatusConflict},
	} {
		if rec := postControl(s, id, c.form); rec.Code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, rec.Code, strings.TrimSpace(rec.Body.String()), c.want)
		}
		if h := e.Stats().Hold; h != nil {
			t.Fatalf("%s: the refused request paused the run (%+v)", c.name, h)
		}
	}

	if rec := postControl(s, id, url.Values{"do": {"pause"}, "csrf": {s.csrf}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("pause with the form secret: %d %s, want 303", rec.Code, rec.Body)
	}
	if h := e.Stats().Hold; h == nil || h.By != "alice on the web page" {
		t.Fatalf("after the page's pause the run holds %+v, want alice's pause", h)
	}
	if rec := postControl(s, id, url.Values{"do": {"pause"}, "csrf": {s.csrf}}); rec.Code != http.StatusConflict {
		t.Errorf("a second pause: %d, want 409 (the first pause stands)", rec.Code)
	}
	page := s.renderJob(t, id)
	if strings.Contains(page, `name="action"`) {
		// A field named action hides the form's action from app.js,
		// which posted the first Pause to /jobs/[object RadioNodeList].
		t.Error("a form of the job page has a field named action")
	}
	if !strings.Contains(page, `paused</span> by alice on the web page at`) || !strings.Contains(page, `id="run-continue"`) {
		t.Errorf("the job page does not say who paused the run, or offers no Continue:\n%s", page)
	}
	close(first)
	waitFor(t, "the 2 calls in flight at the pause recorded", func() bool { return e.Stats().Done == 2 })
	if n := tk.started.Load(); n != 2 {
		t.Errorf("%d calls started under the pause, want only the 2 in flight when it began", n)
	}

	second := tk.hold()
	if rec := postControl(s, id, url.Values{"do": {"continue"}, "csrf": {s.csrf}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("continue: %d %s, want 303", rec.Code, rec.Body)
	}
	waitFor(t, "2 more calls in flight after Continue", func() bool { return tk.started.Load() == 4 })
	if rec := postControl(s, id, url.Values{"do": {"stop"}, "csrf": {s.csrf}, "via": {"fetch"}}); rec.Code != http.StatusNoContent {
		t.Fatalf("stop: %d %s, want 204", rec.Code, rec.Body)
	}
	close(second)
	sum := <-done
	if sum.Stop != engine.StopOperator || !strings.Contains(sum.StopDetail, "stopped by alice on the web page at ") {
		t.Errorf("the run stopped with %v %q, want the operator's stop saying who", sum.Stop, sum.StopDetail)
	}
	if sum.Done != 4 || sum.Pending != 6 {
		t.Errorf("the stop left %d done, %d pending; want the 4 calls in flight recorded, 6 pending", sum.Done, sum.Pending)
	}
	if page := s.renderJob(t, id); !strings.Contains(page, `stopping</span> stopped by alice`) || strings.Contains(page, `id="run-pause"`) {
		t.Errorf("after the stop the page does not say so, or still offers Pause:\n%s", page)
	}
}

// TestThePagePausesContinuesAndStopsAJobOnWorkers: the page's Pause of a
// job on workers answered 409 ("workers stop, they do not pause"); it
// pauses every worker now, says who paused, and Continue lifts it.
func TestThePagePausesContinuesAndStopsAJobOnWorkers(t *testing.T) {
	st := &memory.Store{}
	j, err := st.Create(t.Context(), store.Manifest{Name: "on-workers", Created: time.Now(), Items: 9, State: store.StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	id := j.Manifest().ID
	j.Close()
	ws := &scriptedWorkers{jobID: id}
	s := New(Config{Store: st, Workers: ws})
	if !strings.Contains(s.renderJob(t, id), `id="workers-stop"`) {
		t.Error("the page of a running job on workers offers no Stop")
	}
	if rec := postControl(s, id, url.Values{"do": {"stop"}}); rec.Code != http.StatusForbidden || len(ws.stopped) != 0 {
		t.Errorf("a stop without the form secret: %d, %d stops; want 403 and none", rec.Code, len(ws.stopped))
	}
	if !strings.Contains(s.renderJob(t, id), `id="workers-pause"`) {
		t.Error("the page of a running job on workers offers no Pause")
	}
	steps := []struct {
		do   string
		code int
		why  string
	}{
		{"continue", http.StatusConflict, "not paused"},
		{"pause", http.StatusSeeOther, "pauses every worker"},
		{"pause", http.StatusConflict, "the first pause stands"},
		{"continue", http.StatusSeeOther, "goes on"},
	}
	for _, st := range steps {
		if rec := postControl(s, id, url.Values{"do": {st.do}, "csrf": {s.csrf}}); rec.Code != st.code {
			t.Errorf("%s of a job on workers: %d %s, want %d (%s)", st.do, rec.Code, rec.Body, st.code, st.why)
		}
		if p := s.renderJob(t, id); st.do == "pause" && !strings.Contains(p, "paused by the web page since") {
			t.Errorf("after a pause the page of a job on workers does not say who paused it:\n%s", p)
		}
	}
	if rec := postControl(s, id, url.Values{"do": {"stop"}, "csrf": {s.csrf}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("stop: %d %s, want 303", rec.Code, rec.Body)
	}
	if len(ws.stopped) != 1 || !strings.HasPrefix(ws.stopped[0], "stopped by the web page at ") {
		t.Errorf("the workers were asked %q, want one stop saying who", ws.stopped)
	}
}

// renderJob returns the job's page.
func (s *Server) renderJob(t *testing.T, id string) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/jobs/"+id, nil)
	req.Host = "127.0.0.1:1"
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /jobs/%s: %d %s", id, rec.Code, rec.Body)
	}
	return rec.Body.String()
}
