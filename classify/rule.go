package classify

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
)

// Rule is a user's classification rule, evaluated before every default so
// that a job can say "this stderr means the quota is gone" or "exit 3 is
// retryable for this script".
//
// A rule matches an error when every condition that is set matches; unset
// conditions (nil regex, empty lists) are ignored. A rule with no
// condition at all never matches, and neither does one whose Class is
// Unknown. Lists match when the error's value is any of their entries.
type Rule struct {
	// Name identifies the rule in decisions: a match gives the reason
	// `rule "Name"`.
	Name string
	// Message is matched against err.Error() and, when the error's chain
	// holds a StderrCarrier, against its Stderr(); either matching is a
	// match.
	Message *regexp.Regexp
	// Status lists HTTP statuses (from a StatusCoder in the chain).
	Status []int
	// Code lists provider error codes (from a ProviderCoder in the chain),
	// compared exactly.
	Code []string
	// ExitCode lists process exit codes (from an ExitCoder in the chain);
	// -1 matches a process killed by a signal.
	ExitCode []int
	// Class is what a matching error is classified as.
	Class Class
}

// RuleError reports a rule that NewRule cannot build. Field names the
// offending part ("message", "status", "code", "exit_code", "class", or ""
// for the rule as a whole) so that a spec loader can point at the line.
type RuleError struct {
	Rule  string
	Field string
	Err   error
}

func (e *RuleError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("classify: rule %q: %v", e.Rule, e.Err)
	}
	return fmt.Sprintf("classify: rule %q: %s: %v", e.Rule, e.Field, e.Err)
}

// Unwrap returns the underlying problem, such as a *regexp/syntax.Error.
func (e *RuleError) Unwrap() error { return e.Err }

// NewRule builds a Rule from the plain values of a job spec: messageRegex
// is compiled ("" leaves Message unset) and class is parsed with
// ParseClass. It fails with a *RuleError when the regex does not compile,
// the class is missing or unknown, a status is not an HTTP status
// (100-599), an exit code is outside -1..255, a code is empty, or the rule
// has no condition at all (it would never match).
func NewRule(name, messageRegex string, status []int, codes []string, exitCodes []int, class string) (Rule, error) {
	r := Rule{
		Name:     name,
		Status:   slices.Clone(status),
		Code:     slices.Clone(codes),
		ExitCode: slices.Clone(exitCodes),
	}
	if messageRegex != "" {
		re, err := regexp.Compile(messageRegex)
		if err != nil {
			return Rule{}, &RuleError{Rule: name, Field: "message", Err: err}
		}
		r.Message = re
	}
	for _, s := range status {
		if s < 100 || s > 599 {
			return Rule{}, &RuleError{Rule: name, Field: "status", Err: fmt.Errorf("%d is not an HTTP status (want 100-599)", s)}
		}
	}
	for _, c := range codes {
		if c == "" {
			return Rule{}, &RuleError{Rule: name, Field: "code", Err: errors.New("empty provider code")}
		}
	}
	for _, x := range exitCodes {
		if x < -1 || x > 255 {
			return Rule{}, &RuleError{Rule: name, Field: "exit_code", Err: fmt.Errorf("%d is not an exit code (want 0-255, or -1 for killed by a signal)", x)}
		}
	}
	if class == "" {
		return Rule{}, &RuleError{Rule: name, Field: "class", Err: errors.New("missing (want retryable, fatal, item, invalid or canceled)")}
	}
	c, err := ParseClass(class)
	if err != nil || c == Unknown {
		return Rule{}, &RuleError{Rule: name, Field: "class", Err: fmt.Errorf("unknown class %q (want retryable, fatal, item, invalid or canceled)", class)}
	}
	r.Class = c
	if !r.hasCondition() {
		return Rule{}, &RuleError{Rule: name, Err: errors.New("no condition: set a message regex, a status, a code or an exit code, or the rule never matches")}
	}
	return r, nil
}

func (r *Rule) hasCondition() bool {
	return r.Message != nil || len(r.Status) > 0 || len(r.Code) > 0 || len(r.ExitCode) > 0
}

// reason is the Decision reason of a match: `rule "Name"`.
func (r *Rule) reason() string {
	if r.Name == "" {
		return "rule"
	}
	return "rule " + strconv.Quote(r.Name)
}

// matches reports whether r matches an error whose message is msg and
// whose carried signals are s.
func (r *Rule) matches(msg string, s *carried) bool {
	if r.Class == Unknown || !r.hasCondition() {
		return false
	}
	if len(r.Status) > 0 && (s.status == 0 || !slices.Contains(r.Status, s.status)) {
		return false
	}
	if len(r.Code) > 0 && (s.code == "" || !slices.Contains(r.Code, s.code)) {
		return false
	}
	if len(r.ExitCode) > 0 && (!s.hasExit || !slices.Contains(r.ExitCode, s.exit)) {
		return false
	}
	if r.Message != nil && !r.Message.MatchString(msg) && (!s.hasStderr || !r.Message.MatchString(s.stderr)) {
		return false
	}
	return true
}
