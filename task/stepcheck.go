package task

import "context"

// StepCheck is asked by a task that makes several model calls in one
// attempt (an agent item) before each call after its first: steps is how
// many calls the attempt has made (or replayed) so far, tokens and
// costUSD what they spent, which the run has not counted yet (it counts
// an attempt's spend when the attempt returns). A
// non-nil error — a budget reached — ends the attempt there: the task
// returns it, with the Result of what it spent. The engine puts one in
// the context of each attempt of a run with a budget.
type StepCheck func(ctx context.Context, steps int, tokens int64, costUSD float64) error

type stepCheckKey struct{}

// WithStepCheck returns ctx carrying check, for the task the attempt runs.
func WithStepCheck(ctx context.Context, check StepCheck) context.Context {
	return context.WithValue(ctx, stepCheckKey{}, check)
}

// StepCheckFrom returns the StepCheck ctx carries, nil for none.
func StepCheckFrom(ctx context.Context) StepCheck {
	c, _ := ctx.Value(stepCheckKey{}).(StepCheck)
	return c
}
