package classify

import (
	"context"
	"errors"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
)

func mustRegexp(t testing.TB, expr string) *regexp.Regexp {
	t.Helper()
	re, err := regexp.Compile(expr)
	if err != nil {
		t.Fatalf("regexp %q: %v", expr, err)
	}
	return re
}

func TestRulesTakePrecedence(t *testing.T) {
	quota := Rule{Name: "quota", Message: mustRegexp(t, "quota"), Class: Fatal}
	tests := []struct {
		name string
		err  error
	}{
		{"over a mark", WithClass(errors.New("quota gone"), Item, "template")},
		{"over cancellation", errors.Join(errors.New("quota gone"), context.Canceled)},
		{"over the deadline", errors.Join(errors.New("quota gone"), context.DeadlineExceeded)},
		{"over x-should-retry", &httpErr{status: 503, msg: "quota gone", advice: advice(true)}},
		{"over status", &httpErr{status: 429, msg: "quota gone"}},
		{"over exit code", &exitErr{code: 75, stderr: "quota gone"}},
		{"over keywords", errors.New("quota check timed out")},
	}
	c := Classifier{Rules: []Rule{quota}}
	want := Decision{Fatal, `rule "quota"`}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Classify(wrapThreeDeep(tt.err)); got != want {
				t.Errorf("Classify(%q) = %v, want %v", tt.err, got, want)
			}
		})
	}
}

func TestRuleMatching(t *testing.T) {
	tests := []struct {
		name  string
		rule  Rule
		err   error
		match bool
	}{
		{"message matches err.Error", Rule{Message: mustRegexp(t, `flaky \d+`)}, errors.New("flaky 42"), true},
		{"message matches stderr", Rule{Message: mustRegexp(t, "database is locked")}, &exitErr{code: 1, stderr: "Error: database is locked\n"}, true},
		{"message matches a response body", Rule{Message: mustRegexp(t, "try later")}, &httpErr{status: 400, body: `{"error":"try later"}`}, true},
		{"message matches neither", Rule{Message: mustRegexp(t, "locked")}, &exitErr{code: 1, stderr: "segfault"}, false},
		{"status in list", Rule{Status: []int{400, 418}}, status(418), true},
		{"status not in list", Rule{Status: []int{400}}, status(418), false},
		{"status on an error without one", Rule{Status: []int{400}}, errors.New("400"), false},
		{"code in list", Rule{Code: []string{"server_error"}}, statusCode(500, "server_error"), true},
		{"code not in list", Rule{Code: []string{"server_error"}}, statusCode(500, "api_error"), false},
		{"code on an error without one", Rule{Code: []string{"server_error"}}, status(500), false},
		{"exit code in list", Rule{ExitCode: []int{3}}, &exitErr{code: 3}, true},
		{"exit code not in list", Rule{ExitCode: []int{3}}, &exitErr{code: 4}, false},
		{"exit code -1 matches a signal kill", Rule{ExitCode: []int{-1}}, &exitErr{code: -1, signal: "killed"}, true},
		{"exit code on an error without one", Rule{ExitCode: []int{0}}, errors.New("exit 0"), false},
		{"every set condition must match: all do", Rule{Status: []int{429}, Message: mustRegexp(t, "tokens")}, &httpErr{status: 429, msg: "tokens per min"}, true},
		{"every set condition must match: message does not", Rule{Status: []int{429}, Message: mustRegexp(t, "tokens")}, &httpErr{status: 429, msg: "requests per min"}, false},
		{"every set condition must match: status does not", Rule{Status: []int{429}, Message: mustRegexp(t, "tokens")}, &httpErr{status: 503, msg: "tokens per min"}, false},
		{"no condition never matches", Rule{}, errors.New("anything"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rule.Name, tt.rule.Class = "r", Fatal
			c := Classifier{Rules: []Rule{tt.rule}}
			got := c.Classify(wrapThreeDeep(tt.err))
			if matched := got.Reason == `rule "r"`; matched != tt.match {
				t.Errorf("rule %+v on %q: matched = %v (decision %v), want %v", tt.rule, tt.err, matched, got, tt.match)
			}
		})
	}
}

func TestFirstMatchingRuleWins(t *testing.T) {
	c := Classifier{Rules: []Rule{
		{Name: "unset class", Message: mustRegexp(t, "^x$"), Class: Unknown},
		{Name: "exit 3", ExitCode: []int{3}, Class: Retryable},
		{Name: "stderr x", Message: mustRegexp(t, "^x$"), Class: Fatal},
		{Name: "any x", Message: mustRegexp(t, "^x$"), Class: Item},
	}}
	if got, want := c.Classify(&exitErr{code: 3, stderr: "x"}), (Decision{Retryable, `rule "exit 3"`}); got != want {
		t.Errorf("exit 3 with stderr x: got %v, want %v", got, want)
	}
	if got, want := c.Classify(&exitErr{code: 4, stderr: "x"}), (Decision{Fatal, `rule "stderr x"`}); got != want {
		t.Errorf("exit 4 with stderr x: got %v, want %v (a rule of class Unknown must be skipped)", got, want)
	}
	if got, want := c.Classify(&exitErr{code: 127, stderr: "y"}), (Decision{Fatal, "exit 127"}); got != want {
		t.Errorf("no rule matching: got %v, want the default %v", got, want)
	}
}

func TestUnnamedRuleReason(t *testing.T) {
	c := Classifier{Rules: []Rule{{Status: []int{503}, Class: Fatal}}}
	if got, want := c.Classify(status(503)), (Decision{Fatal, "rule"}); got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestNewRuleBuildsRule(t *testing.T) {
	status := []int{429}
	r, err := NewRule("quota", "(?i)quota", status, []string{"insufficient_quota"}, []int{3}, "fatal")
	if err != nil {
		t.Fatalf("NewRule: %v", err)
	}
	if r.Name != "quota" || r.Message.String() != "(?i)quota" || r.Class != Fatal ||
		!slices.Equal(r.Status, []int{429}) || !slices.Equal(r.Code, []string{"insufficient_quota"}) || !slices.Equal(r.ExitCode, []int{3}) {
		t.Errorf("NewRule built %+v", r)
	}
	status[0] = 500
	if r.Status[0] != 429 {
		t.Errorf("the rule shares the caller's status slice: changing it changed the rule to %v", r.Status)
	}
	only, err := NewRule("only message", "flaky", nil, nil, nil, "retryable")
	if err != nil {
		t.Fatalf("NewRule with only a message: %v", err)
	}
	if got, want := (Classifier{Rules: []Rule{only}}).Classify(errors.New("flaky disk")), (Decision{Retryable, `rule "only message"`}); got != want {
		t.Errorf("classify with the built rule: got %v, want %v", got, want)
	}
}

func TestNewRuleRejects(t *testing.T) {
	tests := []struct {
		name      string
		regex     string
		status    []int
		codes     []string
		exitCodes []int
		class     string
		field     string
	}{
		{"bad regex", "(unclosed", nil, nil, nil, "fatal", "message"},
		{"unknown class", "x", nil, nil, nil, "transient", "class"},
		{"missing class", "x", nil, nil, nil, "", "class"},
		{"class unknown", "x", nil, nil, nil, "unknown", "class"},
		{"status out of range", "", []int{42}, nil, nil, "item", "status"},
		{"exit code out of range", "", nil, nil, []int{256}, "item", "exit_code"},
		{"empty code", "", nil, []string{""}, nil, "item", "code"},
		{"no condition", "", nil, nil, nil, "item", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRule("r1", tt.regex, tt.status, tt.codes, tt.exitCodes, tt.class)
			var re *RuleError
			if !errors.As(err, &re) {
				t.Fatalf("NewRule error = %v, want a *RuleError", err)
			}
			if re.Rule != "r1" || re.Field != tt.field {
				t.Errorf("RuleError names rule %q field %q, want rule %q field %q (error: %v)", re.Rule, re.Field, "r1", tt.field, err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, `classify: rule "r1": `+tt.field) {
				t.Errorf("error %q does not start by naming the rule and the field %q", msg, tt.field)
			}
		})
	}
}

func TestNewRuleBadRegexKeepsSyntaxError(t *testing.T) {
	_, err := NewRule("r1", "(unclosed", nil, nil, nil, "fatal")
	var se *syntax.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v does not wrap the *syntax.Error", err)
	}
	want := "classify: rule \"r1\": message: error parsing regexp: missing closing ): `(unclosed`"
	if err.Error() != want {
		t.Errorf("error message\n got: %s\nwant: %s", err, want)
	}
}
