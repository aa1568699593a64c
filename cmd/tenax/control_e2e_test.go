package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/store/postgres"
)

// lines counts the complete lines of the file at path (0 when absent).
func lines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

// TestPauseContinueAndStopARunningJobFromAnotherTerminal: a local run is
// paused by `tenax pause` from another process (status says so, in text
// and JSON, and no call starts), goes on after `tenax continue`, and
// `tenax stop` with calls in flight drains them: every call started has
// its record, the job is aborted and resumable, and the run's log says
// who did each.
func TestPauseContinueAndStopARunningJobFromAnotherTerminal(t *testing.T) {
	w := newWorkdir(t)
	// 40 calls of 3 s, 4 at a time: half a minute of work, so that the
	// job is still running at the stop however loaded the machine is.
	cmd, _, errb, id := startSlowJob(t, w, "3")
	calls := filepath.Join(w.dir, "calls.log")
	results := filepath.Join(w.home, "jobs", id, "results.jsonl")
	waitFor(t, "a record", func() bool { return lines(results) >= 1 })

	r := w.tenax("pause", id, "--by", "alice")
	if r.code != 0 || !strings.Contains(r.stdout, "paused by alice") {
		t.Fatalf("tenax pause: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The calls in flight at the pause finish and are recorded; none
	// starts after them.
	waitFor(t, "the calls in flight at the pause recorded", func() bool { return lines(results) == lines(calls) })
	held := lines(calls)
	if held >= 40 {
		t.Fatalf("all 40 items ran before the pause took effect")
	}
	st := w.tenax("status", id)
	if st.code != 0 || !strings.Contains(st.stdout, "Paused:    by alice since") {
		t.Errorf("status of the paused job does not say it is paused:\n%s%s", st.stdout, st.stderr)
	}
	var js struct {
		Job struct {
			State  string
			Paused *struct{ By string }
		}
	}
	if sj := w.tenax("status", "--json", id); json.Unmarshal([]byte(sj.stdout), &js) != nil || js.Job.Paused == nil || js.Job.Paused.By != "alice" || js.Job.State != "running" {
		t.Errorf("status --json of the paused job: %+v\n%s", js, sj.stdout)
	}
	if again := w.tenax("pause", id); again.code != 2 || !strings.Contains(again.stderr, "already paused, by alice") {
		t.Errorf("a second pause: exit %d %q, want 2 saying who paused first", again.code, again.stderr)
	}
	if n := lines(calls); n != held {
		t.Errorf("%d calls started while paused, want none", n-held)
	}

	if c := w.tenax("continue", id, "--by", "bob"); c.code != 0 || !strings.Contains(c.stdout, "continued by bob") {
		t.Fatalf("tenax continue: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	if c := w.tenax("continue", id); c.code != 2 || !strings.Contains(c.stderr, "is not paused") {
		t.Errorf("a continue of a job not paused: exit %d %q, want 2", c.code, c.stderr)
	}
	if st := w.tenax("status", id); strings.Contains(st.stdout, "Paused:") {
		t.Errorf("status after continue still says paused:\n%s", st.stdout)
	}
	waitFor(t, "calls after continue", func() bool { return lines(calls) > held })

	s := w.tenax("stop", id, "--by", "carol")
	if s.code != 0 || !strings.Contains(s.stdout, "stopped (state aborted): stopped by carol at ") || !strings.Contains(s.stdout, "tenax resume "+id) {
		t.Fatalf("tenax stop: exit %d\n%s%s", s.code, s.stdout, s.stderr)
	}
	if code := waitExit(t, cmd, 2*time.Minute); code != 3 {
		t.Errorf("the stopped run exited %d, want 3 (aborted by an operator)", code)
	}
	if started, recorded := lines(calls), lines(results); started != recorded || recorded >= 40 {
		t.Errorf("%d calls started, %d recorded, of 40: want every call in flight at the stop recorded, and items left pending", started, recorded)
	}
	log := errb.String()
	for _, want := range []string{"paused by alice", "continued by bob", "stopped by carol at "} {
		if !strings.Contains(log, want) {
			t.Errorf("the run's log does not audit %q:\n%s", want, log)
		}
	}
	if n := lines(filepath.Join(w.home, "jobs", id, "control.jsonl")); n != 3 {
		t.Errorf("the control file holds %d requests, want the 3 asked", n)
	}
	if p := w.tenax("pause", id); p.code != 2 || !strings.Contains(p.stderr, "is not running (state aborted)") {
		t.Errorf("a pause of the stopped job: exit %d %q, want 2", p.code, p.stderr)
	}
	if p := w.tenax("stop", "job_20000101_000000"); p.code != 2 {
		t.Errorf("a stop of no job: exit %d %q, want 2", p.code, p.stderr)
	}
	res := w.tenax("resume", id)
	if res.code != 0 || lines(results) != 40 {
		t.Errorf("resume after the stop: exit %d, %d records of 40\n%s", res.code, lines(results), res.stderr)
	}
}

// TestPostgresPauseContinueStopAndStatusJSONOfAJobOnWorkers: tenax pause,
// continue and stop act on a job on workers through the database;
// status --json shows the pause, and the queue and workers that the text
// shows (it had neither).
func TestPostgresPauseContinueStopAndStatusJSONOfAJobOnWorkers(t *testing.T) {
	w, pg, id := enqueuedJob(t)
	type statusQueue struct {
		Job struct {
			State  string
			Paused *struct{ By string }
		}
		Queue *struct {
			Finished, Waiting int
			Paused            bool
		}
		Workers []struct{ ID, State string }
	}
	status := func() (s statusQueue) {
		t.Helper()
		r := w.tenax("status", "--json", id, "--store", pg)
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &s) != nil {
			t.Fatalf("status --json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		return s
	}
	if p := w.tenax("pause", id, "--store", pg, "--by", "alice"); p.code != 0 || !strings.Contains(p.stdout, "paused by alice on every worker") {
		t.Fatalf("tenax pause: exit %d\n%s%s", p.code, p.stdout, p.stderr)
	}
	s := status()
	if s.Job.Paused == nil || s.Job.Paused.By != "alice" || s.Queue == nil || s.Queue.Waiting != 40 || !s.Queue.Paused {
		t.Errorf("status --json of the paused job: %+v queue %+v; want paused by alice, 40 waiting in a paused queue", s.Job, s.Queue)
	}
	if st := w.tenax("status", id, "--store", pg); !strings.Contains(st.stdout, "Paused:    by alice since") {
		t.Errorf("status does not say the job is paused:\n%s", st.stdout)
	}
	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"pause", id}, 2, "already paused, by alice"},
		{[]string{"continue", id, "--by", "bob"}, 0, "continued by bob"},
		{[]string{"continue", id}, 2, "is not paused"},
		{[]string{"stop", id, "--by", "carol"}, 0, "stopped by carol"},
		{[]string{"pause", id}, 2, "is not running (state aborted)"},
	}
	for _, st := range steps {
		r := w.tenax(append(st.args, "--store", pg)...)
		if r.code != st.code || !strings.Contains(r.stdout+r.stderr, st.want) {
			t.Errorf("tenax %s: exit %d, want %d saying %q\n%s%s", strings.Join(st.args, " "), r.code, st.code, st.want, r.stdout, r.stderr)
		}
	}
	if r := w.tenax("resume", id, "--store", pg, "--workers", "1", "-q"); r.code != 1 || !strings.Contains(r.stdout, "30 succeeded, 10 failed, 0 pending") {
		t.Fatalf("resume after the stop: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s = status()
	if s.Job.Paused != nil || s.Queue == nil || s.Queue.Finished != 40 || len(s.Workers) != 1 || s.Workers[0].State != "stopped" {
		t.Errorf("status --json after the resume: %+v queue %+v workers %+v; want not paused, 40 finished, one stopped worker", s.Job, s.Queue, s.Workers)
	}
}

// TestPostgresPauseAndStopAOneProcessRunFromAnotherTerminal: a run whose
// records go to PostgreSQL without workers (tenax run --store
// postgres://…) could be paused from its own page only; tenax pause from
// another terminal said the job was not enqueued for workers. The
// request now goes through the store (tenax_notes), which the run reads:
// pause holds it (status says who), continue lets it go on, and stop
// with calls in flight drains them, every call started recorded, the job
// aborted (exit 3) and resumable.
func TestPostgresPauseAndStopAOneProcessRunFromAnotherTerminal(t *testing.T) {
	pg := postgresStore(t)
	w := newWorkdir(t)
	cmd, _, errb, id := startSlowJob(t, w, "3", "--store", pg)
	st, err := postgres.Open(t.Context(), pg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	records := func() int {
		j, err := st.OpenReadOnly(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		o, err := j.Outcomes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ok, failed, _ := o.Count(len(o))
		return ok + failed
	}
	calls := filepath.Join(w.dir, "calls.log")
	waitFor(t, "a record", func() bool { return records() >= 1 })

	r := w.tenax("pause", id, "--store", pg, "--by", "alice")
	if r.code != 0 || !strings.Contains(r.stdout, "paused by alice") || !strings.Contains(r.stdout, "tenax continue "+id+" --store") {
		t.Fatalf("tenax pause: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	waitFor(t, "the calls in flight at the pause recorded", func() bool { return records() == lines(calls) })
	held := lines(calls)
	if held >= 40 {
		t.Fatalf("all 40 items ran before the pause took effect")
	}
	if s := w.tenax("status", id, "--store", pg); !strings.Contains(s.stdout, "Paused:    by alice since") {
		t.Errorf("status of the paused job does not say it is paused:\n%s%s", s.stdout, s.stderr)
	}
	if again := w.tenax("pause", id, "--store", pg); again.code != 2 || !strings.Contains(again.stderr, "already paused, by alice") {
		t.Errorf("a second pause: exit %d %q, want 2 saying who paused first", again.code, again.stderr)
	}
	if n := lines(calls); n != held {
		t.Errorf("%d calls started while paused, want none", n-held)
	}
	if c := w.tenax("continue", id, "--store", pg, "--by", "bob"); c.code != 0 || !strings.Contains(c.stdout, "continued by bob") {
		t.Fatalf("tenax continue: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	waitFor(t, "calls in flight after continue", func() bool { return lines(calls) > records() })

	s := w.tenax("stop", id, "--store", pg, "--by", "carol")
	if s.code != 0 || !strings.Contains(s.stdout, "stopped (state aborted): stopped by carol at ") || !strings.Contains(s.stdout, "tenax resume "+id+" --store") {
		t.Fatalf("tenax stop: exit %d\n%s%s", s.code, s.stdout, s.stderr)
	}
	if code := waitExit(t, cmd, 2*time.Minute); code != 3 {
		t.Errorf("the stopped run exited %d, want 3 (aborted by an operator)", code)
	}
	if started, recorded := lines(calls), records(); started != recorded || recorded >= 40 {
		t.Errorf("%d calls started, %d recorded, of 40: want every call in flight at the stop recorded, and items left pending", started, recorded)
	}
	for _, want := range []string{"paused by alice", "continued by bob", "stopped by carol at "} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("the run's log does not audit %q:\n%s", want, errb.String())
		}
	}
	if reqs, _, err := st.Controls(t.Context(), id, 0); err != nil || len(reqs) != 3 {
		t.Errorf("tenax_notes holds %d control requests (%v), want the 3 asked", len(reqs), err)
	}
	if res := w.tenax("resume", id, "--store", pg); res.code != 0 || records() != 40 {
		t.Errorf("resume after the stop: exit %d, %d records of 40\n%s", res.code, records(), res.stderr)
	}
}
