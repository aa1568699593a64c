package web

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/task"
)

// historyJob writes a job whose item 1 has three records over two runs:
// the first run's failure after it left a route, the second run's
// failure, and the success of a re-run.
func historyJob(t *testing.T) (*jsonl.Store, string) {
	t.Helper()
	st := &jsonl.Store{Home: t.TempDir()}
	j, err := st.Create(context.Background(), store.Manifest{Name: "history", Created: time.Now(), Items: 3, State: store.StateFailed})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	cost := 0.0042
	runs := [][]store.Record{
		{
			{Idx: 0, Input: []byte(`{"w":"a"}`), Output: []byte(`{"ok":true}`), Attempts: 1, FinishedAt: now},
			{Idx: 1, Input: []byte(`{"w":"b"}`), Output: []byte(`null`), Attempts: 3, Class: classify.Item, Route: "backup", Model: "m-small",
				Tries: []store.Try{{Route: "primary", Model: "m-big", Error: "503 from primary: overloaded", Class: classify.Retryable}},
				Error: `backup refused: <script>alert("x")</script>`, Stderr: "traceback: line 7", FinishedAt: now},
		},
		{
			{Idx: 1, Input: []byte(`{"w":"b"}`), Output: []byte(`null`), Attempts: 2, HealAttempts: 1, Class: classify.Invalid,
				Error: "output invalid after re-asks: missing property length", FinishedAt: now.Add(time.Minute)},
		},
		{
			{Idx: 1, Input: []byte(`{"w":"b"}`), Output: []byte(`{"text":"bee","length":3}`), Attempts: 1, Route: "primary",
				Usage: task.Usage{InputTokens: 120, OutputTokens: 30}, CostUSD: &cost, FinishReason: "stop", FinishedAt: now.Add(2 * time.Minute)},
		},
	}
	for _, recs := range runs {
		if err := j.Append(context.Background(), recs...); err != nil {
			t.Fatal(err)
		}
		if err := j.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return st, j.Manifest().ID
}

func itemPage(t *testing.T, s *Server, id, idx string) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/jobs/"+id+"/items/"+idx, nil)
	req.Host = "127.0.0.1:1"
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET item %s: %d %s", idx, rec.Code, rec.Body)
	}
	return rec.Body.String()
}

func TestTheItemPageShowsEveryRecordOfEveryRun(t *testing.T) {
	st, id := historyJob(t)
	page := itemPage(t, New(Config{Store: st}), id, "1")
	for _, want := range []string{
		`id="record-1"`, `id="record-2"`, `id="record-3"`,
		"Record 3 <small>latest</small>",
		// The first run: the route it left, with the error and class that
		// moved it, then the route that failed it.
		"primary <small>m-big</small>", "503 from primary: overloaded", `class-retryable">retryable`,
		`<td class="route">backup <small>model m-small</small>`, "traceback: line 7",
		// The second run: a re-ask.
		"2 (1 re-asks)", "missing property length",
		// The re-run that worked: its usage, cost, finish reason, output.
		"120 in / 30 out · $0.0042", `<td class="finish">stop</td>`, html.EscapeString(`{"text":"bee","length":3}`),
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the item page lacks %q:\n%s", want, page)
		}
	}
	if strings.Index(page, `id="record-1"`) > strings.Index(page, `id="record-3"`) {
		t.Error("the records are not oldest first")
	}
}

func TestAnItemsErrorCannotScriptThePage(t *testing.T) {
	st, id := historyJob(t)
	page := itemPage(t, New(Config{Store: st}), id, "1")
	if strings.Contains(page, `<script>alert`) {
		t.Fatalf("a record's error reached the page as markup:\n%s", page)
	}
	if !strings.Contains(page, `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`) {
		t.Errorf("the error is not shown escaped:\n%s", page)
	}
}

func TestAPendingItemHasNoRecords(t *testing.T) {
	st, id := historyJob(t)
	page := itemPage(t, New(Config{Store: st}), id, "2")
	if !strings.Contains(page, "No record yet: the item is pending.") || strings.Contains(page, `id="history"`) {
		t.Errorf("an item without records is not shown pending:\n%s", page)
	}
}
