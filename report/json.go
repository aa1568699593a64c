package report

import (
	"strconv"
	"time"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// StatusSchema names the shape of `tenax status --json` for one job. A
// field is added under the same name; a field renamed or removed, or a
// meaning changed, gets a new name (tenax.status/v2). docs/records.md
// describes it.
const StatusSchema = "tenax.status/v1"

// JobsSchema names the shape of `tenax status --all --json`.
const JobsSchema = "tenax.jobs/v1"

// StatusJSON is a Report as scripts read it: the shape is fixed by
// StatusSchema, apart from the Report's Go fields, so that a field renamed
// in Go does not rename it for jq.
type StatusJSON struct {
	Schema string  `json:"schema"`
	Job    JobJSON `json:"job"`
	// Note explains a state status worked out (stale) rather than read.
	Note     string       `json:"note,omitempty"`
	Outcomes OutcomesJSON `json:"outcomes"`
	// FailedByClass counts failed items by class (transient, fatal, …).
	FailedByClass map[string]int `json:"failed_by_class"`
	// ErrorGroups are every failure group, largest first (text status
	// shows the top ones).
	ErrorGroups []ErrorGroupJSON `json:"error_groups"`
	// Attempts maps a number of task calls ("1", "2", …) to how many items
	// took it.
	Attempts    map[string]int `json:"attempts"`
	HealedItems int            `json:"healed_items"`
	CacheHits   int            `json:"cache_hits"`
	Usage       task.Usage     `json:"usage"`
	CostUSD     float64        `json:"cost_usd"`
	Time        *TimeJSON      `json:"time,omitempty"`
	Waves       []WaveJSON     `json:"waves,omitempty"`
	// Routes are the outcomes by route, for a job with routes.
	Routes []RouteJSON `json:"routes,omitempty"`
	// Tools are agent items' failures, errors fed back and calls by tool,
	// for a job with agent items.
	Tools []ToolJSON `json:"tools,omitempty"`
	// Queue and Workers are set for a job run by workers: its River
	// queue, and every worker that has run on the database (the text's
	// Queue line and Workers table).
	Queue   *QueueJSON   `json:"queue,omitempty"`
	Workers []WorkerJSON `json:"workers,omitempty"`
}

// ToolJSON is one tool of agent items (docs/agents.md): the failed items
// laid to it, the errors it fed back, its calls.
type ToolJSON struct {
	Name          string `json:"name"`
	FailedItems   int    `json:"failed_items"`
	ErrorsFedBack int    `json:"errors_fed_back"`
	Calls         int    `json:"calls"`
}

// RouteJSON is one route's outcomes (docs/routes.md).
type RouteJSON struct {
	Name      string     `json:"name"`
	Succeeded int        `json:"succeeded"`
	Failed    int        `json:"failed"`
	Left      int        `json:"left"`
	Usage     task.Usage `json:"usage"`
	CostUSD   float64    `json:"cost_usd"`
	// BusySeconds is the summed duration of the route's records.
	BusySeconds float64 `json:"busy_seconds"`
	// Faults and Refused are the route's breaker counts over the job's
	// runs: calls failed as an outage or fatal, and calls its open
	// breaker refused. Omitted when none was kept.
	Faults  int `json:"faults,omitempty"`
	Refused int `json:"refused,omitempty"`
}

// JobJSON is a job's manifest as status reports it; it is also one entry of
// the job list (JobsJSON).
type JobJSON struct {
	ID    string `json:"id"`
	Name  string `json:"name,omitempty"`
	State string `json:"state"`
	// StopReason says why the job last stopped short; empty when it ran to
	// its end or is running.
	StopReason   string    `json:"stop_reason,omitempty"`
	BreakerTrips int       `json:"breaker_trips"`
	Created      time.Time `json:"created"`
	Updated      time.Time `json:"updated,omitzero"`
	TenaxVersion string    `json:"tenax_version"`
	SpecPath     string    `json:"spec_path,omitempty"`
	InputPath    string    `json:"input_path"`
	// Items is the number of items in the input (in its first InputBytes
	// bytes when InputBytes is set: a --limit run read no further).
	Items      int   `json:"items"`
	InputBytes int64 `json:"input_bytes,omitempty"`
	// Paused is the operator's pause holding the running job (tenax
	// pause, the page's Pause); absent when none holds it.
	Paused *PauseJSON `json:"paused,omitempty"`
}

// PauseJSON is an operator's pause: who and since when.
type PauseJSON struct {
	By    string    `json:"by"`
	Since time.Time `json:"since"`
}

// QueueJSON is the River queue of a job run by workers, as the text's
// Queue, Check-in and Budget lines show it: items by the state of their
// River job, and what holds the queue.
type QueueJSON struct {
	Finished  int `json:"finished"`
	Waiting   int `json:"waiting"`
	Running   int `json:"running"`
	Retrying  int `json:"retrying"`
	Discarded int `json:"discarded"`
	// Paused is set while the queue is paused: by the shared breaker, a
	// check-in or an operator's pause (Job.Paused).
	Paused  bool              `json:"paused"`
	Breaker SharedBreakerJSON `json:"breaker"`
	Checkin *CheckinJSON      `json:"checkin,omitempty"`
	Budget  *SharedBudgetJSON `json:"budget,omitempty"`
}

// SharedBreakerJSON is the shared circuit breaker of a job run by workers.
type SharedBreakerJSON struct {
	Open      bool   `json:"open"`
	Action    string `json:"action,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Owner     string `json:"owner,omitempty"`
	Trips     int    `json:"trips"`
	Decision  string `json:"decision,omitempty"`
	DecidedBy string `json:"decided_by,omitempty"`
}

// CheckinJSON is where the check-ins of a job on workers stand while a
// terminal holds them.
type CheckinJSON struct {
	Every int64 `json:"every"`
	Done  int64 `json:"done"`
	Next  int64 `json:"next"`
	Due   bool  `json:"due"`
}

// SharedBudgetJSON is what the workers of a job spent of its budget.
type SharedBudgetJSON struct {
	Tokens  int64   `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
	Held    int64   `json:"held_tokens"`
	Reached string  `json:"reached,omitempty"`
}

// WorkerJSON is one worker that has run on the database, as the text's
// Workers table shows it.
type WorkerJSON struct {
	ID   string   `json:"id"`
	Host string   `json:"host"`
	PID  int      `json:"pid"`
	Jobs []string `json:"jobs"`
	// State is running, stopped or lost (its heartbeat older than its
	// rescue-after: its items go back to the queue).
	State     string     `json:"state"`
	Heartbeat time.Time  `json:"heartbeat"`
	Stopped   *time.Time `json:"stopped,omitempty"`
	InFlight  int        `json:"in_flight"`
	Finished  int64      `json:"finished"`
}

// OutcomesJSON counts the job's items: every item is in exactly one.
type OutcomesJSON struct {
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Pending   int `json:"pending"`
}

// ErrorGroupJSON is the failures that share one fingerprint.
type ErrorGroupJSON struct {
	Fingerprint string   `json:"fingerprint"`
	Class       string   `json:"class"`
	Count       int      `json:"count"`
	Normalized  string   `json:"normalized"`
	Example     string   `json:"example"`
	ExampleIdx  int      `json:"example_idx"`
	Hints       []string `json:"hints,omitempty"`
}

// TimeJSON is when the job's items ran; absent before the first record.
type TimeJSON struct {
	// Began is when the earliest recorded item started; Last is the last
	// finish.
	Began time.Time `json:"began"`
	Last  time.Time `json:"last"`
	// BusySeconds sums every recorded item's duration.
	BusySeconds float64 `json:"busy_seconds"`
	// ItemsPerSecond is finished items over RateSeconds (Report.Rate); 0
	// when it cannot be told.
	ItemsPerSecond float64 `json:"items_per_second"`
	RateSeconds    float64 `json:"rate_seconds"`
}

// WaveJSON is one provider batch wave of a batch job.
type WaveJSON struct {
	Wave        int      `json:"wave"`
	Fresh       bool     `json:"fresh"`
	Items       int      `json:"items"`
	Batches     []string `json:"batches"`
	Requests    int      `json:"requests"`
	Collected   int      `json:"collected"`
	Online      int      `json:"online"`
	Closed      bool     `json:"closed"`
	CostUSD     float64  `json:"cost_usd"`
	FullCostUSD float64  `json:"full_cost_usd"`
}

// JobsJSON is the job list, newest last as `tenax status --all` prints it.
type JobsJSON struct {
	Schema string    `json:"schema"`
	Jobs   []JobJSON `json:"jobs"`
}

// NewJobJSON is m as status reports it, in state (CurrentState's).
func NewJobJSON(m store.Manifest, state store.State) JobJSON {
	return JobJSON{
		ID: m.ID, Name: m.Name, State: string(state), StopReason: m.StopReason,
		BreakerTrips: m.BreakerTrips, Created: m.Created, Updated: m.Updated,
		TenaxVersion: m.Version, SpecPath: m.SpecPath, InputPath: m.InputPath,
		Items: m.Items, InputBytes: m.InputBytes, Paused: pauseJSON(m, state),
	}
}

// pauseJSON is the manifest's pause of a job in state, nil unless it holds
// a running job.
func pauseJSON(m store.Manifest, state store.State) *PauseJSON {
	if m.Paused == nil || state != store.StateRunning {
		return nil
	}
	return &PauseJSON{By: m.Paused.By, Since: m.Paused.Since}
}

// JSON is the report in the StatusSchema shape. Empty maps and lists are
// {} and [], never null, so that `jq '.error_groups | length'` works on a
// job without failures.
func (r *Report) JSON() StatusJSON {
	s := StatusJSON{
		Schema:        StatusSchema,
		Job:           NewJobJSON(r.Manifest, r.Manifest.State),
		Note:          r.Note,
		Outcomes:      OutcomesJSON{Succeeded: r.Succeeded, Failed: r.Failed, Pending: r.Pending},
		FailedByClass: map[string]int{},
		ErrorGroups:   []ErrorGroupJSON{},
		Attempts:      map[string]int{},
		HealedItems:   r.HealedItems,
		CacheHits:     r.CacheHits,
		Usage:         r.Usage,
		CostUSD:       r.CostUSD,
	}
	for c, n := range r.ByClass {
		s.FailedByClass[c.String()] = n
	}
	for k, n := range r.Attempts {
		s.Attempts[strconv.Itoa(k)] = n
	}
	for _, g := range r.Groups {
		s.ErrorGroups = append(s.ErrorGroups, ErrorGroupJSON{
			Fingerprint: g.Fingerprint, Class: g.Class.String(), Count: g.Count,
			Normalized: g.Normalized, Example: g.Example, ExampleIdx: g.ExampleIdx, Hints: g.Hints,
		})
	}
	if !r.First.IsZero() {
		rate, over := r.Rate()
		s.Time = &TimeJSON{Began: r.Began, Last: r.Last, BusySeconds: r.Busy.Seconds(),
			ItemsPerSecond: rate, RateSeconds: over.Seconds()}
	}
	for _, w := range r.Waves {
		s.Waves = append(s.Waves, WaveJSON{
			Wave: w.Wave, Fresh: w.Fresh, Items: w.Items, Batches: w.Batches, Requests: w.Requests,
			Collected: w.Collected, Online: w.Online, Closed: w.Closed, CostUSD: w.CostUSD, FullCostUSD: w.FullCostUSD,
		})
	}
	for _, rr := range r.Routes {
		s.Routes = append(s.Routes, RouteJSON{Name: rr.Name, Succeeded: rr.Succeeded, Failed: rr.Failed, Left: rr.Left,
			Usage: rr.Usage, CostUSD: rr.CostUSD, BusySeconds: rr.Busy.Seconds(),
			Faults: rr.Breaker.Faults, Refused: rr.Breaker.Refused})
	}
	for _, tr := range r.Tools {
		s.Tools = append(s.Tools, ToolJSON{Name: tr.Name, FailedItems: tr.FailedItems, ErrorsFedBack: tr.ErrorsFedBack, Calls: tr.Calls})
	}
	return s
}
