package report

import (
	"context"
	"fmt"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// CurrentState is the job's state as a user should read it: the
// manifest's, except that a job saved as running that no process holds
// any more is stale. why says whose run it was, for a stale job, and the
// command that continues it, with locationFlags (job.LocationFlags: the
// --home or --store the job was found with). The JSONL store tells by its
// lock, which names the process that holds the job; the PostgreSQL store
// by the workers that took the job up: stale when none of them is alive
// (a job no worker took up yet keeps running: it waits for one). Other
// stores' jobs keep the manifest's state.
func CurrentState(ctx context.Context, st store.Store, m store.Manifest, locationFlags string) (s store.State, why string) {
	if m.State != store.StateRunning {
		return m.State, ""
	}
	if wh, ok := st.(workersHolder); ok {
		ran, alive, err := wh.WorkersHolding(ctx, m.ID)
		if err != nil || !ran || alive {
			return m.State, ""
		}
		return store.StateStale, fmt.Sprintf("the manifest says running, but no live worker holds the job (its workers were killed or stopped: none beat within its rescue-after); `tenax worker --job %s%s` continues it", m.ID, locationFlags)
	}
	js, ok := st.(*jsonl.Store)
	if !ok {
		return m.State, ""
	}
	h, err := js.Holder(ctx, m.ID)
	if err != nil || h.Held {
		return m.State, ""
	}
	who := "its process"
	if h.PID > 0 {
		who = fmt.Sprintf("pid %d", h.PID)
		if h.Host != "" {
			who += " on " + h.Host
		}
	}
	return store.StateStale, fmt.Sprintf("the manifest says running, but %s no longer holds the job (killed, or the machine stopped); `tenax resume %s%s` continues it", who, m.ID, locationFlags)
}

// workersHolder is a store whose jobs workers run (the PostgreSQL
// store): whether any worker took a job up, and whether a live one holds
// it.
type workersHolder interface {
	WorkersHolding(ctx context.Context, id string) (ran, alive bool, err error)
}
