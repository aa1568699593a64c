package worker_test

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// TestAnAnswerOneWorkerPaidIsACacheHitOnAnother: worker A runs a job
// against a provider (the mock, counting its requests) with the
// response cache on; worker B, on another home (another machine), runs a
// second job over the same items and makes no request: every answer is
// served from the cache in the database. With the cache in each home, B
// paid for every answer again.
func TestAnAnswerOneWorkerPaidIsACacheHitOnAnother(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 20
	m := mock.New(mock.Config{})
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	t.Setenv("MOCK_KEY", "k")
	spec := writeJob(t, n, "")
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), "  provider: mock\n  model: mock-json\n  output: json\n",
		"  provider: openai\n  base_url: "+srv.URL+"/v1\n  api_key: ${MOCK_KEY}\n  model: mock-echo\n", 1)
	src = strings.Replace(src, "cache: {enabled: false}\n", "", 1)
	if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(name string) {
		e := enqueue(t, c, spec)
		startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, Concurrency: 4})
		waitFor(t, "worker "+name+" to finish its job", func() (bool, error) {
			return jobState(t, c, e.JobID) != store.StateRunning, nil
		})
		if got := len(finals(t, dsn, e.JobID)); got != n {
			t.Fatalf("worker %s: %d items recorded, want %d", name, got, n)
		}
	}
	run("A")
	paid := m.Stats().Requests
	if paid != n {
		t.Fatalf("worker A made %d requests for %d items, want one each", paid, n)
	}
	run("B")
	if got := m.Stats().Requests - paid; got != 0 {
		t.Errorf("worker B made %d requests for the %d items A paid for, want 0: every answer a cache hit", got, n)
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM tenax_cache`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != n {
		t.Errorf("tenax_cache holds %d entries, want the %d answers", rows, n)
	}
}
