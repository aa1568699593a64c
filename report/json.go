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
		Items: m.Items, InputBytes: m.InputBytes,
	}
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
			Usage: rr.Usage, CostUSD: rr.CostUSD, BusySeconds: rr.Busy.Seconds()})
	}
	return s
}
