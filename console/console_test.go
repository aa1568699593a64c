package console_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/console"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// apiError is a provider error as task/llm returns one.
type apiError struct{}

func (apiError) Error() string        { return "Incorrect API key provided: sk-abc123" }
func (apiError) HTTPStatus() int      { return 401 }
func (apiError) ProviderCode() string { return "invalid_api_key" }
func (apiError) RequestID() string    { return "req_42" }
func (apiError) Stderr() string {
	return `{"error": {"message": "Incorrect API key provided: sk-abc123", "code": "invalid_api_key"}}`
}

func report() engine.TripReport {
	item := task.Item{Idx: 152, Raw: []byte(`{"id": "hsk3_152", "simplified": "辆"}`)}
	return engine.TripReport{
		Reason: "5 consecutive failures",
		Last: &engine.Failure{
			Item:     item,
			Err:      fmt.Errorf("calling the provider: %w", apiError{}),
			Decision: classify.Decision{Class: classify.Fatal, Reason: "status 401 code invalid_api_key"},
			Attempts: 1,
		},
		Stats: engine.Stats{Total: 5000, Succeeded: 433, Failed: 5},
	}
}

// TestTripSummaryIsDesignsText pins the breaker summary of docs/classes.md.
func TestTripSummaryIsDesignsText(t *testing.T) {
	want := `
Circuit breaker open: 5 consecutive failures
Last error: fatal (401 invalid_api_key): calling the provider: Incorrect API key provided: sk-abc123
Failed item: #152 {"id":"hsk3_152","simplified":"辆"}
Processed: 438/5000 | Failed: 5 | Success rate: 98.9%
`
	if got := console.TripSummary(report()); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
}

func TestInspectShowsEverythingAboutTheLastError(t *testing.T) {
	got := console.Inspect(report().Last)
	for _, want := range []string{
		"Class:      fatal", "Because:    status 401 code invalid_api_key", "Status:     401",
		"Code:       invalid_api_key", "Request id: req_42", "1. calling the provider: Incorrect API key",
		"2. Incorrect API key provided", `"code": "invalid_api_key"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Inspect lacks %q:\n%s", want, got)
		}
	}
}

func TestPrompterAnswers(t *testing.T) {
	cases := []struct {
		name, input string
		want        engine.TripDecision
		shows       []string
	}{
		{"continue", "c\n", engine.TripContinue, nil},
		{"abort in capitals", "Abort\n", engine.TripAbortRun, nil},
		{"inspect then continue", "i\nc\n", engine.TripContinue, []string{"Request id: req_42"}},
		{"nonsense then abort", "x\n\na\n", engine.TripAbortRun, []string{"Please answer C, A or I."}},
		// End of input was recorded as "aborted by the operator": nobody
		// answered, and the run now says so.
		{"end of input is no answer", "", engine.TripNoAnswer, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			p := console.NewPrompter(strings.NewReader(c.input), &out)
			if got := p.Trip(context.Background(), report()); got != c.want {
				t.Errorf("decision %v, want %v", got, c.want)
			}
			for _, s := range append(c.shows, "[C]ontinue  [A]bort  [I]nspect details") {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
		})
	}
}

func TestPrompterRedactsSecrets(t *testing.T) {
	var out strings.Builder
	p := console.NewPrompter(strings.NewReader("i\na\n"), &out)
	p.Redact = func(s string) string { return strings.ReplaceAll(s, "sk-abc123", "[redacted]") }
	p.Trip(context.Background(), report())
	if strings.Contains(out.String(), "sk-abc123") || !strings.Contains(out.String(), "[redacted]") {
		t.Errorf("the secret reached the terminal:\n%s", out.String())
	}
}

func TestCheckinShowsLatestAndAsks(t *testing.T) {
	var out strings.Builder
	p := console.NewPrompter(strings.NewReader("c\n"), &out)
	latest := []store.Record{{Idx: 3, Output: []byte(`{"es": "coche"}`)}, {Idx: 4, Error: "400 bad", Class: classify.Item}}
	if !p.CheckIn(context.Background(), engine.CheckIn{Stats: engine.Stats{Done: 5, Total: 100, Failed: 1}, Latest: latest}) {
		t.Fatal("answered Continue, got abort")
	}
	for _, want := range []string{"Check-in: 5/100 done, 1 failed", `#3 {"es":"coche"}`, "#4 failed (item): 400 bad", "[C]ontinue  [A]bort"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("check-in lacks %q:\n%s", want, out.String())
		}
	}
}

// TestTheTerminalIsToldTheTruthAboutASettledTrip: a terminal whose answer
// came after a new trip said the breaker closed without an answer; it
// says the trip was answered elsewhere and the breaker tripped again. One
// whose read of the breaker failed said it closed without an answer; it
// says the read failed, and why.
func TestTheTerminalIsToldTheTruthAboutASettledTrip(t *testing.T) {
	q := engine.SharedTrip{JobID: "job_1", Trip: 1}
	for _, tc := range []struct {
		settled engine.TripSettled
		want    string
	}{
		{engine.TripSettled{Answered: true, Decision: engine.TripAbortRun, By: "tenax breaker on h (pid 1)"}, "answered elsewhere: abort, by tenax breaker on h (pid 1)"},
		{engine.TripSettled{}, "closed before an answer came from here"},
		{engine.TripSettled{TrippedAgain: 2}, "trip 1 of the circuit breaker was answered elsewhere (or closed by itself), and it has tripped again since (trip 2)"},
		{engine.TripSettled{ReadErr: errors.New("worker: reading the breaker of job job_1: connection refused")},
			"trip 1 of the circuit breaker was answered elsewhere or closed by itself, but reading how failed: worker: reading the breaker of job job_1: connection refused"},
	} {
		var out strings.Builder
		console.NewPrompter(strings.NewReader(""), &out).Settled(q, tc.settled)
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("Settled(%+v) printed %q, want %q", tc.settled, out.String(), tc.want)
		}
	}
}

// TestOneTerminalPrompterAsksAJobsWorkers: the prompter a run of one
// engine uses asks an attached job's shared trip in the words the worker
// that tripped rendered, and its check-in, each after the line that says
// every worker waits.
func TestOneTerminalPrompterAsksAJobsWorkers(t *testing.T) {
	var out strings.Builder
	p := console.NewPrompter(strings.NewReader("i\nc\nc\n"), &out)
	trip := engine.TripReport{Shared: &engine.SharedTrip{JobID: "job_7", Trip: 1, Owner: "w1",
		Summary: "\nCircuit breaker open: 3 consecutive failures\n", Failures: []string{"\nItem:       #4 {}\n"}}}
	if d := p.Trip(context.Background(), trip); d != engine.TripContinue {
		t.Errorf("answered c to the shared trip, got %v", d)
	}
	if !p.CheckIn(context.Background(), engine.CheckIn{JobID: "job_7", Stats: engine.Stats{Done: 10, Total: 40}}) {
		t.Error("answered c to the job's check-in, got abort")
	}
	for _, want := range []string{
		"job job_7: the circuit breaker tripped on worker w1", "Circuit breaker open: 3 consecutive failures",
		"Item:       #4 {}", "job job_7: paused for a check-in", "Check-in: 10/40 done, 0 failed",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the terminal lacks %q:\n%s", want, out.String())
		}
	}
	if p.Asking() {
		t.Error("Asking() is true after both questions were answered")
	}
}

// TestPlainProgressLine: the line counts what this run means to do (a
// --limit or a resume), not the whole input.
func TestPlainProgressLine(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := engine.Stats{Started: start, Total: 5000, Planned: 1000, Done: 250, InFlight: 8, Limit: 8, Retries: 12, Failed: 3, Breaker: breaker.Closed, HealAttempts: 4}
	got := console.Line(s, start.Add(10*time.Second))
	want := "progress: 250/1000 (25.0%) | 25.0 items/s | ETA 30s | in flight 8/8 | retries 12 | failed 3 | breaker closed | re-asks 4"
	if got != want {
		t.Errorf("line:\n%s\nwant:\n%s", got, want)
	}
}

// Example shows the breaker summary an operator sees on a terminal.
func Example() {
	f := &engine.Failure{
		Item:     task.Item{Idx: 7, Raw: []byte(`{"path": "a.go"}`)},
		Err:      errors.New("./review.sh: exit 127: review.sh: not found"),
		Decision: classify.Decision{Class: classify.Fatal},
	}
	fmt.Fprint(os.Stdout, console.TripSummary(engine.TripReport{
		Reason: "3 consecutive failures", Last: f,
		Stats: engine.Stats{Total: 120, Succeeded: 4, Failed: 3},
	}))
	// Output:
	// Circuit breaker open: 3 consecutive failures
	// Last error: fatal: ./review.sh: exit 127: review.sh: not found
	// Failed item: #7 {"path":"a.go"}
	// Processed: 7/120 | Failed: 3 | Success rate: 57.1%
}

// TestInspectPagesThroughTheDrainedFailures is the regression test of an
// Inspect that showed only the last failure: I shows the one that tripped
// the breaker, I (or N) again the one before it, P the one after, through
// every failure the log kept.
func TestInspectPagesThroughTheDrainedFailures(t *testing.T) {
	log := console.NewFailureLog(10)
	for _, idx := range []int{5, 6, 7} {
		item := task.Item{Idx: idx, Raw: []byte(fmt.Sprintf(`{"n": %d}`, idx))}
		log.Observe(engine.Event{Kind: engine.ItemFinished, Item: item, Err: fmt.Errorf("exit 127: item %d", idx),
			Decision: classify.Decision{Class: classify.Fatal}, Record: store.Record{Idx: idx, Error: "exit 127", Class: classify.Fatal, Attempts: 1}})
		log.Observe(engine.Event{Kind: engine.ItemFinished, Item: item, Record: store.Record{Idx: idx + 100}})
	}
	newest := log.Newest()
	last := newest[0]
	var out strings.Builder
	p := console.NewPrompter(strings.NewReader("i\ni\nn\ni\np\na\n"), &out)
	p.Failures = log
	if got := p.Trip(context.Background(), engine.TripReport{Reason: "3 consecutive failures", Last: &last}); got != engine.TripAbortRun {
		t.Fatalf("decision %v, want abort", got)
	}
	var order []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "Item:") {
			order = append(order, strings.Fields(l)[1])
		}
	}
	want := []string{"#7", "#6", "#5", "#7", "#5"}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("Inspect showed %v, want %v:\n%s", order, want, out.String())
	}
	for _, s := range []string{"Failure 1 of 3, newest first", "Failure 3 of 3", "That was the oldest failure kept"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
}

// TestFailureLogKeepsTheNewest: a full log forgets the oldest failures.
func TestFailureLogKeepsTheNewest(t *testing.T) {
	log := console.NewFailureLog(3)
	for idx := range 5 {
		log.Add(engine.Failure{Item: task.Item{Idx: idx}})
	}
	var got []int
	for _, f := range log.Newest() {
		got = append(got, f.Item.Idx)
	}
	if fmt.Sprint(got) != "[4 3 2]" {
		t.Errorf("kept %v, want [4 3 2]", got)
	}
}

// providerError is an error as task/llm and task/http word theirs: the
// status (and the provider's code) first, then the message.
type providerError struct {
	msg    string
	status int
	code   string
}

func (e providerError) Error() string        { return e.msg }
func (e providerError) HTTPStatus() int      { return e.status }
func (e providerError) ProviderCode() string { return e.code }

// exitError is an exec task's failure as task/exec words it.
type exitError struct{ msg string }

func (e exitError) Error() string { return e.msg }
func (exitError) ExitCode() int   { return 127 }
func (exitError) Signal() string  { return "" }

// TestLastErrorSaysStatusAndCodeOnce is the regression test of a breaker
// summary whose "Last error" said the status and the code twice
// ("retryable (429 rate_limit_exceeded): 429 rate_limit_exceeded: …"):
// the tags say them, the message then goes on from what they do not.
func TestLastErrorSaysStatusAndCodeOnce(t *testing.T) {
	tests := []struct {
		name  string
		class classify.Class
		err   error
		want  string
	}{
		{"a provider's 429", classify.Retryable, providerError{"429 rate_limit_exceeded: Rate limit reached for gpt-4o-mini (request req_1)", 429, "rate_limit_exceeded"},
			"retryable (429 rate_limit_exceeded): Rate limit reached for gpt-4o-mini (request req_1)"},
		{"wrapped by a cause", classify.Fatal, fmt.Errorf("calling the provider: %w", providerError{"401 invalid_api_key: Incorrect API key provided", 401, "invalid_api_key"}),
			"fatal (401 invalid_api_key): calling the provider: Incorrect API key provided"},
		{"an http task's status", classify.Retryable, providerError{"http: 429 Too Many Requests: slow down", 429, ""},
			"retryable (429): Too Many Requests: slow down"},
		{"a status without its code in the message", classify.Retryable, providerError{"500: the server had an error", 500, "server_error"},
			"retryable (500 server_error): the server had an error"},
		{"a number that only looks like the status", classify.Retryable, providerError{"quota of 4290 requests reached", 429, ""},
			"retryable (429): quota of 4290 requests reached"},
		{"an exit code", classify.Fatal, exitError{"exit 127: review.sh: not found"},
			"fatal (exit 127): review.sh: not found"},
		{"a message that does not repeat them", classify.Fatal, fmt.Errorf("calling the provider: %w", apiError{}),
			"fatal (401 invalid_api_key): calling the provider: Incorrect API key provided: sk-abc123"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := console.ErrorLine(tt.class, tt.err); got != tt.want {
				t.Errorf("ErrorLine:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}
