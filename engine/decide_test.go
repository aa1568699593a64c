package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/task"
)

// hinted is a retryable 429 carrying a server's retry hint.
func hinted(d time.Duration) error { return hintErr{d: d} }

func output(s string) task.Result { return task.Result{Output: json.RawMessage(`"` + s + `"`)} }

// TestDecide names each transition of the per-item core: one answer, from a
// given state, and what the item does next.
func TestDecide(t *testing.T) {
	steady := retry.Policy{MaxAttempts: 3, Backoff: retry.Backoff{Base: time.Second, Jitter: retry.JitterNone}}
	errInvalid := errors.New("missing field es")
	errFatalValidator := classify.WithClass(errors.New("validator: exec: not found"), classify.Fatal, "validator cannot run")
	tests := []struct {
		name   string
		policy retry.Policy
		rules  engine.Rules
		// before moves the fresh state (a Retrier of policy) to where the
		// answer finds it.
		before func(*engine.State)
		answer engine.Answer

		step     engine.Step
		delay    time.Duration
		class    classify.Class
		attempt  int
		reject   bool
		failures int // the streak after the answer
		heals    int // the re-asks after the answer
		check    func(*testing.T, engine.State, engine.Next)
	}{
		{name: "valid_output_records_success", answer: engine.Answer{Result: output("ok")}, step: engine.StepRecord},
		{
			name:   "valid_output_resets_the_streak",
			before: func(s *engine.State) { s.Retrier.Failure(errRetryable); s.Retrier.Failure(errRetryable) },
			answer: engine.Answer{Result: output("ok")}, step: engine.StepRecord,
		},
		{
			name:   "first_call_served_from_the_cache_is_a_cache_hit",
			answer: engine.Answer{Result: task.Result{Output: json.RawMessage(`"ok"`), CacheHit: true}}, step: engine.StepRecord,
			check: func(t *testing.T, s engine.State, _ engine.Next) {
				if !s.CacheHit {
					t.Error("CacheHit is false")
				}
			},
		},
		{
			name:   "invalid_output_resets_the_streak_and_reasks_with_feedback",
			before: func(s *engine.State) { s.Retrier.Failure(errRetryable) },
			answer: engine.Answer{Result: output("wrong"), Invalid: errInvalid},
			step:   engine.StepReask, class: classify.Invalid, attempt: 1, reject: true, heals: 1,
			check: func(t *testing.T, s engine.State, n engine.Next) {
				if n.Feedback == nil || n.Feedback.PreviousOutput != "wrong" || n.Feedback.Attempt != 1 || !strings.Contains(n.Feedback.Message, "missing field es") {
					t.Errorf("feedback %+v; want the output, the error and attempt 1", n.Feedback)
				}
				if string(s.LastOutput) != `"wrong"` || s.Generations != 1 {
					t.Errorf("last output %s, generations %d; want the invalid output, 1", s.LastOutput, s.Generations)
				}
			},
		},
		{
			name:   "cached_output_that_proves_invalid_is_rejected_and_no_cache_hit",
			answer: engine.Answer{Result: task.Result{Output: json.RawMessage(`"wrong"`), CacheHit: true, CacheKey: "k"}, Invalid: errInvalid},
			step:   engine.StepReask, class: classify.Invalid, attempt: 1, reject: true, heals: 1,
			check: func(t *testing.T, s engine.State, _ engine.Next) {
				if s.CacheHit {
					t.Error("CacheHit is true after an invalid output")
				}
			},
		},
		{
			name:   "unusable_output_reasks_like_an_invalid_one",
			before: func(s *engine.State) { s.Retrier.Failure(errRetryable) },
			answer: engine.Answer{Err: &task.OutputError{Output: "not json", Err: errors.New("not JSON")}},
			step:   engine.StepReask, class: classify.Invalid, attempt: 1, heals: 1,
			check: func(t *testing.T, s engine.State, _ engine.Next) {
				if string(s.LastOutput) != `"not json"` {
					t.Errorf("last output %s; want the raw text as a JSON string", s.LastOutput)
				}
			},
		},
		{
			name:   "carried_reasks_number_the_feedback_after_them",
			before: func(s *engine.State) { s.Heals = 2 },
			answer: engine.Answer{Result: output("wrong"), Invalid: errInvalid},
			step:   engine.StepReask, class: classify.Invalid, attempt: 3, reject: true, heals: 3,
		},
		{
			name: "invalid_output_without_heal_fails_invalid", rules: engine.Rules{NoHeal: true},
			answer: engine.Answer{Result: output("wrong"), Invalid: errInvalid},
			step:   engine.StepFail, class: classify.Invalid, reject: true,
		},
		{
			name: "invalid_output_past_the_heal_budget_fails_invalid", rules: engine.Rules{Heal: heal.Budget{MaxAttempts: 1}},
			before: func(s *engine.State) {
				n := (&engine.Rules{Heal: heal.Budget{MaxAttempts: 1}}).Decide(s, engine.Answer{Result: output("wrong"), Invalid: errInvalid})
				if n.Step != engine.StepReask {
					panic("the first invalid output was not re-asked")
				}
			},
			answer: engine.Answer{Result: output("wrong again"), Invalid: errInvalid},
			step:   engine.StepFail, class: classify.Invalid, reject: true, heals: 1,
			check: func(t *testing.T, _ engine.State, n engine.Next) {
				if n.Cause != errInvalid || !errors.Is(n.Err, errInvalid) || n.Err == errInvalid {
					t.Errorf("err %v, cause %v; want the validation error with heal's reason, the bare error as cause", n.Err, n.Cause)
				}
			},
		},
		{
			name:   "validator_that_cannot_run_fails_fatal",
			answer: engine.Answer{Result: output("ok"), Invalid: errFatalValidator},
			step:   engine.StepFail, class: classify.Fatal,
		},
		{
			name:   "invalid_output_of_a_canceled_call_stays_pending",
			answer: engine.Answer{Result: output("wrong"), Invalid: errInvalid, Canceled: true},
			step:   engine.StepPending,
		},
		{
			name: "retryable_under_budget_retries_after_backoff", policy: steady,
			answer: engine.Answer{Err: errRetryable},
			step:   engine.StepRetry, delay: time.Second, class: classify.Retryable, attempt: 1, failures: 1,
		},
		{
			name: "second_retryable_in_a_row_backs_off_further", policy: steady,
			before: func(s *engine.State) { s.Retrier.Failure(errRetryable) },
			answer: engine.Answer{Err: errRetryable},
			step:   engine.StepRetry, delay: 2 * time.Second, class: classify.Retryable, attempt: 2, failures: 2,
		},
		{
			name: "retryable_at_max_attempts_fails_retryable", policy: steady,
			before: func(s *engine.State) { s.Retrier.Failure(errRetryable); s.Retrier.Failure(errRetryable) },
			answer: engine.Answer{Err: errRetryable},
			step:   engine.StepFail, class: classify.Retryable, failures: 3,
		},
		{
			name: "hint_replaces_the_backoff", policy: steady,
			answer: engine.Answer{Err: hinted(7 * time.Second)},
			step:   engine.StepRetry, delay: 7 * time.Second, class: classify.Retryable, attempt: 1, failures: 1,
		},
		{
			name: "hint_is_capped_by_max_hint", policy: retry.Policy{MaxHint: 30 * time.Second},
			answer: engine.Answer{Err: hinted(10 * time.Minute)},
			step:   engine.StepRetry, delay: 30 * time.Second, class: classify.Retryable, attempt: 1, failures: 1,
		},
		{
			name: "hint_is_capped_at_two_minutes_by_default", policy: retry.Policy{},
			answer: engine.Answer{Err: hinted(time.Hour)},
			step:   engine.StepRetry, delay: retry.DefaultMaxHint, class: classify.Retryable, attempt: 1, failures: 1,
		},
		{
			name: "negative_max_hint_ignores_the_hint", policy: retry.Policy{MaxHint: -1, Backoff: retry.Backoff{Base: 3 * time.Second, Jitter: retry.JitterNone}},
			answer: engine.Answer{Err: hinted(time.Minute)},
			step:   engine.StepRetry, delay: 3 * time.Second, class: classify.Retryable, attempt: 1, failures: 1,
		},
		{
			name: "retry_whose_wait_would_pass_max_elapsed_fails_retryable",
			// The item began an hour ago (a batch item read back from
			// its ledger); its budget is 10 minutes.
			policy: retry.Policy{MaxElapsed: 10 * time.Minute},
			before: func(s *engine.State) {
				s.Retrier = retry.Policy{MaxElapsed: 10 * time.Minute}.Continue(time.Now().Add(-time.Hour), 0)
			},
			answer: engine.Answer{Err: errRetryable},
			step:   engine.StepFail, class: classify.Retryable, failures: 1,
		},
		{
			name: "retry_within_max_elapsed_retries", policy: retry.Policy{MaxElapsed: 10 * time.Minute, Backoff: retry.Backoff{Base: time.Second, Jitter: retry.JitterNone}},
			answer: engine.Answer{Err: errRetryable},
			step:   engine.StepRetry, delay: time.Second, class: classify.Retryable, attempt: 1, failures: 1,
		},
		{
			name:   "call_canceled_by_the_run_stays_pending",
			answer: engine.Answer{Err: context.Canceled, Canceled: true},
			step:   engine.StepPending, class: classify.Canceled, failures: 1,
		},
		{
			name:   "canceled_class_after_the_run_stopped_stays_pending",
			answer: engine.Answer{Err: context.Canceled, Stopped: true},
			step:   engine.StepPending, class: classify.Canceled, failures: 1,
		},
		{
			name:   "canceled_class_while_the_run_goes_on_fails_item",
			answer: engine.Answer{Err: context.Canceled},
			step:   engine.StepFail, class: classify.Item, failures: 1,
			check: func(t *testing.T, _ engine.State, n engine.Next) {
				if !strings.HasPrefix(n.Decision.Reason, "canceled, but not by the run") {
					t.Errorf("reason %q", n.Decision.Reason)
				}
			},
		},
		{
			name:   "retryable_failure_of_a_canceled_call_stays_pending",
			answer: engine.Answer{Err: errRetryable, Canceled: true},
			step:   engine.StepPending, class: classify.Retryable, failures: 1,
		},
		{
			name:   "item_error_fails_item_at_once",
			answer: engine.Answer{Err: classify.WithClass(errors.New("400 bad request"), classify.Item, "test")},
			step:   engine.StepFail, class: classify.Item, failures: 1,
		},
		{
			name:   "fatal_error_fails_fatal_at_once",
			answer: engine.Answer{Err: errFatal},
			step:   engine.StepFail, class: classify.Fatal, failures: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := engine.State{Retrier: tt.policy.Start()}
			if tt.before != nil {
				tt.before(&s)
			}
			calls := s.Calls
			n := tt.rules.Decide(&s, tt.answer)
			if n.Step != tt.step || n.Delay != tt.delay || n.Decision.Class != tt.class || n.Attempt != tt.attempt || n.Reject != tt.reject {
				t.Errorf("got %s delay=%v class=%s attempt=%d reject=%t; want %s delay=%v class=%s attempt=%d reject=%t",
					n.Step, n.Delay, n.Decision.Class, n.Attempt, n.Reject, tt.step, tt.delay, tt.class, tt.attempt, tt.reject)
			}
			if s.Calls != calls+1 {
				t.Errorf("calls %d after one answer from %d", s.Calls, calls)
			}
			if got := s.Retrier.Consecutive(); got != tt.failures {
				t.Errorf("streak %d after the answer; want %d", got, tt.failures)
			}
			if s.Heals != tt.heals {
				t.Errorf("heals %d; want %d", s.Heals, tt.heals)
			}
			if n.Step == engine.StepFail && (n.Err == nil || n.Cause == nil) {
				t.Errorf("a failure without its error (%v) or cause (%v)", n.Err, n.Cause)
			}
			if tt.check != nil {
				tt.check(t, s, n)
			}
		})
	}
}

// TestDecideDesignScenario is docs/heal.md's scenario ("The loop") on the decision function
// alone: with max_attempts 3, [retryable, invalid, retryable, retryable,
// valid] succeeds after 5 calls, with 1 re-ask and 2 generations.
func TestDecideDesignScenario(t *testing.T) {
	s := engine.State{Retrier: retry.Policy{MaxAttempts: 3}.Start()}
	var r engine.Rules
	answers := []engine.Answer{
		{Err: errRetryable},
		{Result: output("wrong"), Invalid: errors.New("invalid")},
		{Err: errRetryable},
		{Err: errRetryable},
		{Result: output("valid")},
	}
	want := []engine.Step{engine.StepRetry, engine.StepReask, engine.StepRetry, engine.StepRetry, engine.StepRecord}
	for i, a := range answers {
		if got := r.Decide(&s, a).Step; got != want[i] {
			t.Fatalf("call %d: %s; want %s (a streak that forgot to reset after the invalid answer stops at the 4th call)", i+1, got, want[i])
		}
	}
	if s.Calls != 5 || s.Heals != 1 || s.Generations != 2 {
		t.Errorf("calls=%d heals=%d generations=%d; want 5, 1, 2", s.Calls, s.Heals, s.Generations)
	}
}

func ExampleRules_Decide() {
	rules := engine.Rules{Heal: heal.Budget{MaxAttempts: 2}}
	s := engine.State{Retrier: retry.Policy{MaxAttempts: 3, Backoff: retry.Backoff{Base: time.Second, Jitter: retry.JitterNone}}.Start()}
	for _, a := range []engine.Answer{
		{Err: classify.WithClass(errors.New("503 overloaded"), classify.Retryable, "overloaded")},
		{Result: task.Result{Output: json.RawMessage(`{}`)}, Invalid: errors.New(`missing property "es"`)},
		{Result: task.Result{Output: json.RawMessage(`{"es":"hola"}`)}},
	} {
		n := rules.Decide(&s, a)
		fmt.Println(n.Step, n.Delay, n.Decision.Class)
	}
	fmt.Println(s.Calls, "calls,", s.Heals, "re-ask")
	// Output:
	// retry 1s retryable
	// reask 0s invalid
	// record 0s unknown
	// 3 calls, 1 re-ask
}

// TestAHealedAnswerIsRememberedUnderTheFirstQuestion: a healed item's
// record step names the cache key of its first question (Next.Remember),
// whether the first answer failed validation or was not usable at all;
// an item answered well at once, or never answered under a key, names
// none.
func TestAHealedAnswerIsRememberedUnderTheFirstQuestion(t *testing.T) {
	keyed := func(r task.Result, key string) task.Result { r.CacheKey = key; return r }
	notJSON := &task.OutputError{Output: "{,", Err: errors.New("not JSON")}
	tests := []struct {
		name    string
		answers []engine.Answer
		want    string
	}{
		{"invalid, then valid", []engine.Answer{
			{Result: keyed(output("bad"), "k0"), Invalid: errors.New("invalid")},
			{Result: keyed(output("good"), "k1")},
		}, "k0"},
		{"not usable, then valid", []engine.Answer{
			{Result: keyed(task.Result{}, "k0"), Err: notJSON},
			{Result: keyed(output("good"), "k1")},
		}, "k0"},
		{"a retry before the first answer", []engine.Answer{
			{Err: errRetryable},
			{Result: keyed(output("bad"), "k0"), Invalid: errors.New("invalid")},
			{Result: keyed(output("good"), "k1")},
		}, "k0"},
		{"valid at once", []engine.Answer{{Result: keyed(output("good"), "k0")}}, ""},
		{"no cache", []engine.Answer{
			{Result: output("bad"), Invalid: errors.New("invalid")},
			{Result: output("good")},
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := engine.State{Retrier: retry.Policy{MaxAttempts: 3}.Start()}
			var r engine.Rules
			var next engine.Next
			for _, a := range tt.answers {
				next = r.Decide(&s, a)
			}
			if next.Step != engine.StepRecord || next.Remember != tt.want {
				t.Errorf("last step %s, Remember %q; want record, Remember %q", next.Step, next.Remember, tt.want)
			}
		})
	}
}
