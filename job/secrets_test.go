package job_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/batch"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/store/memory"
)

// leakKey is the API key the secrets tests give the spec through
// ${OPENAI_API_KEY}; every item's input holds it, so every answer the
// mock echoes does too until it is redacted.
const leakKey = "sk-test-SECRET-5f0c2a9e71d84b36"

func leakEnv(k string) (string, bool) {
	if k == "OPENAI_API_KEY" {
		return leakKey, true
	}
	return "", false
}

// TestBatchModeRecordsNoSecret: in batch mode the records written from the
// waves' answers and those the online tail writes (the re-asks of wave 1's
// invalid answers) hold no secret, though the inputs and the answers do.
func TestBatchModeRecordsNoSecret(t *testing.T) {
	_, url := serveMock(t, mock.Config{Seed: 5, Faults: mock.Faults{InvalidOutput: 0.3}})
	w := newLLMWorld(t)
	var items strings.Builder
	for i := range 40 {
		fmt.Fprintf(&items, `{"word": "%s-%d"}`+"\n", leakKey, i)
	}
	w.file("items.jsonl", items.String(), 0o644)
	w.file("job.yaml", fmt.Sprintf(`
input: items.jsonl
task:
  type: llm
  provider: openai
  base_url: %s/v1
  api_key: ${OPENAI_API_KEY}
  model: mock-json
  mode: batch
  prompt: "{{.word}}"
validate:
  json_schema: {type: object, required: [text, length]}
heal: {max_attempts: 16}
retry: {backoff: {base: 1ms, max: 5ms}}
cache: {enabled: false}
batch: {poll_interval: 10ms, poll_max: 50ms, online_tail: 100}
`, url), 0o644)
	res, err := job.Run(context.Background(), filepath.Join(w.dir, "job.yaml"), job.Options{
		Home: w.home, Env: leakEnv, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("job.Run: %v", err)
	}
	if res.Batch == nil || res.Batch.Batches == 0 {
		t.Fatalf("the run submitted no batch (%+v): the test must see the waves' records", res.Batch)
	}
	entries, err := batch.ReadLedgerFile(filepath.Join(res.Dir, batch.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	online := 0
	for _, e := range entries {
		online += e.Online
	}
	if online == 0 {
		t.Fatalf("no wave finished online (ledger %+v): the test must see the online tail's records", entries)
	}
	recs := w.records(res.JobID)
	if len(recs) != 40 {
		t.Errorf("%d of 40 items have a record", len(recs))
	}
	for idx, rec := range recs {
		if !strings.Contains(string(rec.Input), "[redacted]") {
			t.Errorf("item %d's input %s was not redacted: the test must see the secret replaced", idx, rec.Input)
		}
	}
	for _, name := range []string{"results.jsonl", "failures.jsonl"} {
		b, err := os.ReadFile(filepath.Join(res.Dir, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if i := strings.Index(string(b), leakKey); i >= 0 {
			t.Errorf("%s holds the API key at byte %d:\n%s", name, i, b[max(0, i-200):min(len(b), i+200)])
		}
	}
}

// TestWorkerCheckpointRecordsNoSecret: a worker's plan redacts the records
// it appends to the checkpoint it is given (a worker's completes River
// jobs), as a run on one machine does.
func TestWorkerCheckpointRecordsNoSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.yaml")
	src := []byte(`
input: items.jsonl
task:
  type: llm
  provider: openai
  base_url: http://mock.invalid/v1
  api_key: ${OPENAI_API_KEY}
  model: mock-json
  prompt: "{{.word}}"
`)
	p, err := job.NewPlan(path, src, job.Options{Home: t.TempDir(), Env: leakEnv})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	j, err := (&memory.Store{}).Create(ctx, store.Manifest{Items: 1})
	if err != nil {
		t.Fatal(err)
	}
	rec := store.Record{Idx: 0, Error: "401 for key " + leakKey, Input: []byte(`{"word": "` + leakKey + `"}`)}
	if err := p.Checkpoint(j).Append(ctx, rec); err != nil {
		t.Fatal(err)
	}
	var got []store.Record
	if err := j.Scan(ctx, func(r store.Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("stored %d records, want 1", len(got))
	}
	if strings.Contains(got[0].Error+string(got[0].Input), leakKey) || !strings.Contains(got[0].Error, "[redacted]") {
		t.Errorf("stored error %q and input %s; want the key replaced by [redacted] in both", got[0].Error, got[0].Input)
	}
}

// TestExecStderrSecretIsRedactedInResultsFailuresAndExport: a command given
// a secret through task.env prints it to stderr and fails; the record's
// stderr, like its error, holds "[redacted]" in results.jsonl,
// failures.jsonl and the export, never the secret.
func TestExecStderrSecretIsRedactedInResultsFailuresAndExport(t *testing.T) {
	const dbToken = "db-SECRET-8c41f0e2b7a9"
	w := newLLMWorld(t)
	w.words("items.jsonl", 3)
	w.file("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["sh", "-c", "echo \"connecting with $DB_TOKEN\" >&2; echo \"denied for $DB_TOKEN\" >&2; exit 2"]
  env: {DB_TOKEN: "${DB_TOKEN}"}
`, 0o644)
	env := func(k string) (string, bool) {
		if k == "DB_TOKEN" {
			return dbToken, true
		}
		return "", false
	}
	res, err := job.Run(context.Background(), filepath.Join(w.dir, "job.yaml"), job.Options{
		Home: w.home, Env: env, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("job.Run: %v", err)
	}
	recs := w.records(res.JobID)
	if len(recs) != 3 {
		t.Fatalf("%d of 3 items have a record", len(recs))
	}
	for idx, rec := range recs {
		if !strings.Contains(rec.Stderr, "denied for [redacted]") {
			t.Errorf("item %d's stderr is %q: the test must see the command's stderr, the secret replaced", idx, rec.Stderr)
		}
	}
	j, err := (&jsonl.Store{Home: w.home}).OpenReadOnly(context.Background(), res.JobID)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var export strings.Builder
	if err := store.Export(context.Background(), j, &export, store.FormatJSONL, func(store.Record) bool { return true }); err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{"export": export.String()}
	for _, name := range []string{"results.jsonl", "failures.jsonl"} {
		b, err := os.ReadFile(filepath.Join(res.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		texts[name] = string(b)
	}
	for name, text := range texts {
		if !strings.Contains(text, `"stderr"`) {
			t.Errorf("%s has no stderr field: the test must see it:\n%s", name, text)
		}
		if i := strings.Index(text, dbToken); i >= 0 {
			t.Errorf("%s holds the secret at byte %d:\n%s", name, i, text[max(0, i-200):min(len(text), i+200)])
		}
	}
}
