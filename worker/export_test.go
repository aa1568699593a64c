package worker

import (
	"time"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/task"
)

// WrapTask makes the engines of cfg's worker run each job's task through
// wrap, for tests that count what the engine asks of the task.
func WrapTask(cfg *Config, wrap func(task.Task) task.Task) { cfg.wrapTask = wrap }

// WrapRoutes makes the engines of cfg's worker run each job over the
// routes wrap returns for the spec's, for tests that script each route.
func WrapRoutes(cfg *Config, wrap func([]engine.Route) []engine.Route) { cfg.wrapRoutes = wrap }

// SetValidator makes the engines of cfg's worker validate each job's
// outputs with v instead of the spec's validator, for tests that compare
// records with another mode's.
func SetValidator(cfg *Config, v engine.Validator) { cfg.validator = v }

// FinalizeEvery sets how often cfg's worker looks whether its jobs are
// drained while it runs, for tests of the end written as it stops.
func FinalizeEvery(cfg *Config, d time.Duration) { cfg.finalizeEvery = d }

// NoIdleLook keeps cfg's worker from looking whether a job is drained
// when its last execution ends, so that only the periodic look and the
// stop write a job's end.
func NoIdleLook(cfg *Config) { cfg.noIdleLook = true }

// ParseItemSet returns the idx of a River job's item set (ItemsArgs.Items).
var ParseItemSet = parseItemSet

// SharedPollEvery sets how often cfg's worker polls each job's shared
// state, for tests that only a notification can pass in time.
func SharedPollEvery(cfg *Config, d time.Duration) { cfg.sharedPoll = d }

// NoListen keeps cfg's worker from listening for changes of the shared
// state: it learns of them by its poll alone, as workers did before.
func NoListen(cfg *Config) { cfg.noListen = true }

// GateClosed reports whether w holds the calls of job jobID for its
// shared breaker (another worker's trip, an operator's stop); ok is
// false while w runs no such job.
func GateClosed(w *Worker, jobID string) (closed, ok bool) {
	w.mu.Lock()
	r := w.runners[jobID]
	w.mu.Unlock()
	if r == nil {
		return false, false
	}
	r.shared.mu.Lock()
	defer r.shared.mu.Unlock()
	return r.shared.gateClosed, true
}

// CountsCheckins reports whether w counts the items it records toward
// job jobID's check-ins (a terminal holds them); ok is false while w
// runs no such job.
func CountsCheckins(w *Worker, jobID string) (counts, ok bool) {
	w.mu.Lock()
	r := w.runners[jobID]
	w.mu.Unlock()
	if r == nil {
		return false, false
	}
	return r.shared.checkins.Load(), true
}

// Listening reports whether w's listener holds its LISTEN.
func Listening(w *Worker) bool { return w.listening.Load() }

// AttendPollEvery sets how often a's Serve ticks (the attended mark, the
// check-ins, the safety net), for tests that only a notification can
// pass in time.
func AttendPollEvery(a *Attendance, d time.Duration) { a.pollEvery = d }
