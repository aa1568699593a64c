package classify

import (
	"errors"
	"fmt"
)

// Decision is a Class with the reason it was chosen: the rule or signal
// that decided, such as `status 429`, `rule "quota"`, `net.Error timeout`
// or `keyword "reset"`. Logs and the breaker's Inspect print the reason so
// an operator can see why tenax retried or gave up.
type Decision struct {
	Class  Class
	Reason string
}

// String prints the decision as "class (reason)".
func (d Decision) String() string {
	if d.Reason == "" {
		return d.Class.String()
	}
	return fmt.Sprintf("%s (%s)", d.Class, d.Reason)
}

// Error is an error whose class is already decided, by the code that
// produced it. The classifier honours it before anything else but the
// user's rules. Build one with WithClass; a Decision it yields has the
// reason "marked: <Reason>".
type Error struct {
	Class  Class
	Reason string
	Err    error
}

// WithClass returns err marked with class c, for tasks that know better
// than any generic signal (a template that cannot render is always Item).
// It returns nil for a nil err.
func WithClass(err error, c Class, reason string) error {
	if err == nil {
		return nil
	}
	return &Error{Class: c, Reason: reason, Err: err}
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the marked error.
func (e *Error) Unwrap() error { return e.Err }

// classOf returns the class marked on err's chain by WithClass, with the
// reason "marked: <reason>". The outermost mark wins; a mark of class
// Unknown decides nothing.
func classOf(err error) (Decision, bool) {
	e, ok := errors.AsType[*Error](err)
	if !ok || e.Class == Unknown {
		return Decision{}, false
	}
	if e.Reason == "" {
		return Decision{Class: e.Class, Reason: "marked"}, true
	}
	return Decision{Class: e.Class, Reason: "marked: " + e.Reason}, true
}
