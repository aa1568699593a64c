package fix

import (
	"time"

	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/task"
)

// StatusSchema names the shape of StatusJSON; a change that breaks a
// reader gets a new version.
const StatusSchema = "tenax.fix.status/v1"

// StatusJSON is a fix run's status for scripts (tenax status --json ID):
// what WriteStatus shows, under a versioned schema, so that no script
// needs state.json, whose shape is tenax's own.
type StatusJSON struct {
	Schema  string    `json:"schema"`
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Spec    string    `json:"spec,omitempty"`
	Workdir string    `json:"workdir"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Outcome is the run's outcome, stale for a running one no process
	// holds (CurrentOutcome); Stop the rule that ended it (State.Stop).
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
	Stop    string `json:"stop,omitempty"`
	Budget  Budget `json:"budget"`
	// Attempts and Checks are the attempts made and checks run in all.
	Attempts int        `json:"attempts"`
	Checks   int        `json:"checks"`
	Usage    task.Usage `json:"usage"`
	CostUSD  float64    `json:"cost_usd"`
	// Counts are the errors by shown status: regressed, new, active,
	// abandoned, fixed (each present, 0 included).
	Counts map[heal.Status]int `json:"counts"`
	// Errors are every tracked error, in first-seen order.
	Errors []StatusError `json:"errors"`
	// Groups are the errors' groups (Groups), by fingerprint.
	Groups []StatusGroup `json:"groups"`
	// Pending is the attempt in progress, if any.
	Pending *StatusPending `json:"pending,omitempty"`
	// Resume says how to continue the run (ResumeHint); "" once passed.
	Resume string `json:"resume,omitempty"`
}

// StatusError is one tracked error in StatusJSON.
type StatusError struct {
	Fingerprint string `json:"fingerprint"`
	Name        string `json:"name"`
	Message     string `json:"message"`
	// Status is the shown status (abandoned for an unfixed error that
	// spent its per-error budget); Tracked the tracker's own.
	Status   heal.Status `json:"status"`
	Tracked  heal.Status `json:"tracked_status"`
	Attempts int         `json:"attempts"`
	Skipped  bool        `json:"skipped,omitempty"`
	First    bool        `json:"first,omitempty"`
}

// StatusGroup is one group of StatusJSON.
type StatusGroup struct {
	Normalized   string   `json:"normalized"`
	Fingerprints []string `json:"fingerprints"`
}

// StatusPending is the attempt in progress of StatusJSON.
type StatusPending struct {
	Attempt     int       `json:"attempt"`
	Fingerprint string    `json:"fingerprint"`
	Started     time.Time `json:"started"`
}

// Status returns the run's status for scripts; dir is its directory.
func Status(dir string, st *State) (StatusJSON, error) {
	errs, err := st.TrackedErrors()
	if err != nil {
		return StatusJSON{}, err
	}
	out := StatusJSON{
		Schema: StatusSchema, ID: st.ID, Name: st.Name, Spec: st.Spec, Workdir: st.Workdir,
		Created: st.Created, Updated: st.Updated, Outcome: CurrentOutcome(dir, st), Reason: st.Reason, Stop: st.Stop,
		Budget: st.Budget, Attempts: st.spent(), Checks: st.Checks, Usage: st.Usage, CostUSD: st.CostUSD,
		Counts: map[heal.Status]int{}, Errors: []StatusError{}, Groups: []StatusGroup{},
	}
	for _, s := range statusOrder {
		out.Counts[s] = 0
	}
	for _, e := range errs {
		shown := ShownStatus(e, st.Budget)
		out.Counts[shown]++
		mark := statusMark(st, e)
		out.Errors = append(out.Errors, StatusError{
			Fingerprint: e.Fingerprint, Name: e.Name, Message: e.Message, Status: shown, Tracked: e.Status,
			Attempts: e.Attempts, Skipped: mark == " [skipped]", First: mark == " [first]",
		})
	}
	for _, g := range Groups(errs) {
		sg := StatusGroup{Normalized: g.Normalized}
		for _, e := range g.Errors {
			sg.Fingerprints = append(sg.Fingerprints, e.Fingerprint)
		}
		out.Groups = append(out.Groups, sg)
	}
	if p := st.Pending; p != nil {
		out.Pending = &StatusPending{Attempt: p.Attempt, Fingerprint: p.Fingerprint, Started: p.Started}
	}
	if st.Outcome != OutcomePassed {
		out.Resume = ResumeHint(st, errs)
	}
	return out, nil
}
