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
// --home or --store the job was found with). Only the JSONL store can tell
// (its lock names the process that holds the job); other stores' jobs keep
// the manifest's state.
func CurrentState(ctx context.Context, st store.Store, m store.Manifest, locationFlags string) (s store.State, why string) {
	if m.State != store.StateRunning {
		return m.State, ""
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
