package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/batch"
	"github.com/tenaxhq/tenax/internal/pgtest"
	"github.com/tenaxhq/tenax/mock"
)

// batchSpec is a batch mode job over words.jsonl against the mock served
// at base, in the wire format of provider.
func batchSpec(provider, base string, extra string) string {
	url := base + "/v1"
	if provider == "anthropic" || provider == "gemini" {
		url = base
	}
	return fmt.Sprintf(`
input: words.jsonl
task:
  type: llm
  provider: %s
  base_url: %s
  api_key: sk-test
  model: mock-json
  mode: batch
  prompt: "{{.word}}"
validate:
  json_schema: {type: object, required: [text, length]}
retry: {backoff: {base: 10ms, max: 50ms}}
%s`, provider, url, extra)
}

func (w *workdir) words(n int) {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"word": "w%d"}`+"\n", i)
	}
	w.write("words.jsonl", b.String(), 0o644)
}

// ledger reads a job's batch ledger.
func (w *workdir) ledger(id string) []batch.Entry {
	w.t.Helper()
	entries, err := batch.ReadLedgerFile(filepath.Join(w.home, "jobs", id, batch.LedgerFile))
	if err != nil {
		w.t.Fatal(err)
	}
	return entries
}

// slowBatchJob writes job.yaml, a batch-mode job of n words through
// provider's batch API on a mock whose batches take 3 s (time to kill a
// run while it polls), with invalid answers and server errors among them;
// the waves after the first are small: the online tail finishes them.
func slowBatchJob(t *testing.T, provider string, n int) (*mock.Server, *workdir) {
	t.Helper()
	srv := mock.New(mock.Config{Seed: 9, Faults: mock.Faults{InvalidOutput: 0.1, Server: 0.05},
		Batch: mock.BatchConfig{ProcessingTime: 3 * time.Second}})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	w := newWorkdir(t)
	w.words(n)
	w.write("job.yaml", batchSpec(provider, hs.URL, "batch: {poll_interval: 50ms, poll_max: 200ms, online_tail: 100}\n"), 0o644)
	return srv, w
}

// killWhilePolling runs tenax with args in w until its first wave of
// batches is submitted and polled (the batch ids are in the job's ledger),
// kills it with SIGKILL, and returns the job's id.
func killWhilePolling(t *testing.T, w *workdir, args ...string) string {
	t.Helper()
	cmd, stderr := w.start(t, args...)
	sc := bufio.NewScanner(stderr)
	id, seen := "", ""
	for sc.Scan() {
		seen += sc.Text() + "\n"
		if m := jobLine.FindStringSubmatch(sc.Text()); m != nil {
			id = m[1]
		}
		if strings.HasPrefix(sc.Text(), "batches: wave 1:") {
			break // polling: the batch id is in the ledger
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if id == "" {
		t.Fatalf("no job id before the kill; stderr:\n%s", seen)
	}
	return id
}

func TestBatchJobKilledWhilePollingResumesWithoutResubmitting(t *testing.T) {
	for _, provider := range []string{"openai", "anthropic", "gemini"} {
		t.Run(provider, func(t *testing.T) {
			srv, w := slowBatchJob(t, provider, 500)

			id := killWhilePolling(t, w, "run", "job.yaml")
			before := srv.BatchStats()
			if before.Submissions != 1 || before.Requests != 500 {
				t.Fatalf("before the kill the mock saw %+v; want the 500 items in one batch", before)
			}

			r := w.tenax("resume", id)
			if r.code != 0 {
				failures, _ := os.ReadFile(filepath.Join(w.home, "jobs", id, "failures.jsonl"))
				t.Fatalf("resume exited %d:\n%s\n%s\nfailures:\n%s", r.code, r.stdout, r.stderr, failures)
			}
			if !strings.Contains(r.stdout, "1 batch(es) of the last run polled again") {
				t.Errorf("the resume's summary does not say it polled the killed run's batch:\n%s", r.stdout)
			}
			after := srv.BatchStats()
			entries := w.ledger(id)
			submitted, wave1 := 0, 0
			for _, e := range entries {
				if e.Kind == batch.KindSubmitted {
					submitted++
					if e.Wave == 1 {
						wave1++
					}
				}
			}
			if wave1 != 1 || submitted != 1 || after.Submissions != 1 {
				t.Errorf("wave 1 has %d batches in the ledger and the mock counted %d submissions for %d ledgered; want 1, and every submission ledgered", wave1, after.Submissions, submitted)
			}
			if again := after.Requests - before.Requests; again != 0 {
				t.Errorf("the resume submitted %d requests; wave 1's retries and re-asks (about 75) should have gone online", again)
			}
			recs := readRecords(t, filepath.Join(w.home, "jobs", id, "results.jsonl"))
			valid := map[int]bool{}
			for _, rec := range recs {
				var out struct {
					Text string `json:"text"`
				}
				if rec.Error == "" && json.Unmarshal(rec.Output, &out) == nil && out.Text == fmt.Sprintf("w%d", rec.Idx) {
					valid[rec.Idx] = true
				}
			}
			if len(valid) != 500 {
				t.Errorf("%d of 500 items ended valid", len(valid))
			}
			st := w.tenax("status", id)
			if !strings.Contains(st.stdout, "Batches:") || !strings.Contains(st.stdout, "finished online") {
				t.Errorf("status does not show the waves:\n%s", st.stdout)
			}
		})
	}
}

func TestRetryFailuresRerunsTheFailedItemsOfABatchJob(t *testing.T) {
	srv := mock.New(mock.Config{Seed: 4, Faults: mock.Faults{InvalidOutput: 0.2}})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	w := newWorkdir(t)
	w.words(100)
	// Without healing, the invalid answers fail.
	w.write("job.yaml", batchSpec("anthropic", hs.URL, "heal: {max_attempts: 0}\nbatch: {poll_interval: 50ms, online_tail: 0}\n"), 0o644)
	r := w.tenax("run", "job.yaml")
	if r.code != 1 {
		t.Fatalf("run exited %d, want 1 (failures):\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	id := jobID(t, r)
	failed := 0
	for _, rec := range readRecords(t, filepath.Join(w.home, "jobs", id, "results.jsonl")) {
		if rec.Error != "" {
			failed++
		}
	}
	if failed < 5 {
		t.Fatalf("%d items failed; the 20%% invalid answers should have failed about 20", failed)
	}
	w.write("job.yaml", batchSpec("anthropic", hs.URL, "batch: {poll_interval: 50ms, online_tail: 0}\n"), 0o644)
	before := srv.BatchStats()
	r = w.tenax("resume", id, "--retry-failures")
	if r.code != 0 {
		t.Fatalf("resume --retry-failures exited %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "100 succeeded, 0 failed") {
		t.Errorf("after --retry-failures: %s", r.stdout)
	}
	if sent := srv.BatchStats().Requests - before.Requests; sent < int64(failed) || sent > int64(failed)*3 {
		t.Errorf("--retry-failures sent %d requests for %d failed items; only they (and their re-asks) should go", sent, failed)
	}
}

func TestBatchFlagRefusesATaskWithoutABatchAPI(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 3)
	w.write("job.yaml", "input: items.jsonl\ntask:\n  type: exec\n  argv: [echo, \"{{.n}}\"]\n", 0o644)
	r := w.tenax("run", "job.yaml", "--batch")
	if r.code != 2 || !strings.Contains(r.stderr, `--batch: batch mode is for llm tasks, and this task is "exec"`) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 2 saying batch mode is for llm tasks", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(w.home, "jobs")); err == nil {
		entries, _ := os.ReadDir(filepath.Join(w.home, "jobs"))
		if len(entries) > 0 {
			t.Errorf("a refused --batch run created a job")
		}
	}
}

// --ui read the batch mode run's counters from its standby engine, which
// runs nothing until the online tail: the page showed zeros while the
// waves ran.
func TestUIShowsABatchJobsWavesWhileTheyRun(t *testing.T) {
	srv := mock.New(mock.Config{Seed: 2, Batch: mock.BatchConfig{ProcessingTime: 3 * time.Second}})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	w := newWorkdir(t)
	w.words(200)
	w.write("job.yaml", batchSpec("openai", hs.URL, "batch: {poll_interval: 50ms, poll_max: 100ms}\n"), 0o644)
	cmd, stderr := w.start(t, "run", "job.yaml", "--ui=127.0.0.1:0")
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	base, id := "", ""
	for sc.Scan() {
		line := sc.Text()
		if u, ok := strings.CutPrefix(line, "tenax: watch the run at "); ok {
			base = strings.TrimSuffix(u, "/")
		}
		if m := jobLine.FindStringSubmatch(line); m != nil {
			id = m[1]
		}
		if strings.HasPrefix(line, "batches: wave 1:") && strings.Contains(line, "left before") {
			break // polling, requests still running
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	if base == "" || id == "" {
		t.Fatalf("no page address (%q) or job id (%q) before polling", base, id)
	}
	// The terminal's line and the page's come from the same progress,
	// on their own paths: poll the page for it.
	var page []byte
	waitFor(t, "the live page to show the wave's progress", func() bool {
		res, err := http.Get(base + "/jobs/" + id)
		if err != nil {
			t.Fatal(err)
		}
		page, err = io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(page), "batches: wave 1: 1 batch(es)")
	})
	if !strings.Contains(string(page), "<b>200</b><span>calls</span>") {
		t.Errorf("the live page does not count the wave's 200 requests as calls:\n%s", page)
	}
}

// TestPostgresBatchJobKilledWhilePollingResumesWithoutResubmitting is the
// regression test of batch mode refusing a PostgreSQL store ("this store
// has none" — a job directory for its ledger): the ledger is now kept in
// the job's database, so a run killed while polling resumes from there
// without submitting its batch again, and status shows the waves. The
// store's schema is one the DSN names but nobody created: a plain run
// creates it, as the workers' migration does.
func TestPostgresBatchJobKilledWhilePollingResumesWithoutResubmitting(t *testing.T) {
	pg := pgtest.AbsentDSN(t, "tenax_cli_batch_")
	srv, w := slowBatchJob(t, "openai", 300)

	id := killWhilePolling(t, w, "run", "job.yaml", "--store", pg)
	if before := srv.BatchStats(); before.Submissions != 1 || before.Requests != 300 {
		t.Fatalf("before the kill the mock saw %+v; want the 300 items in one batch", before)
	}

	r := w.tenax("resume", id, "--store", pg)
	if r.code != 0 || !strings.Contains(r.stdout, "300 succeeded, 0 failed, 0 pending") {
		t.Fatalf("resume: exit %d, want 0 with 300 succeeded\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "1 batch(es) of the last run polled again") {
		t.Errorf("the resume's summary does not say it polled the killed run's batch:\n%s", r.stdout)
	}
	// Wave 1's retries and re-asks (about 45) are under the online tail:
	// nothing more goes to the batch API.
	if after := srv.BatchStats(); after.Submissions != 1 || after.Requests != 300 {
		t.Errorf("after the resume the mock saw %+v; want still the one batch of 300 (wave 1 not submitted again)", after)
	}
	st := w.tenax("status", id, "--store", pg)
	for _, want := range []string{"Batches:", "wave 1: 300 request(s) in batch_", "finished online"} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, st.stdout)
		}
	}
	if strings.Contains(st.stdout, "Workers:") {
		t.Errorf("status of a job no worker ran shows the workers table:\n%s", st.stdout)
	}
}
