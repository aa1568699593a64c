package report

import (
	"context"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// TestCurrentStateCallsAnAbandonedRunStale: a manifest left running by a
// process that no longer holds the job reads as stale; a held one as
// running.
func TestCurrentStateCallsAnAbandonedRunStale(t *testing.T) {
	ctx := context.Background()
	st := &jsonl.Store{Home: t.TempDir()}
	j, err := st.Create(ctx, store.Manifest{State: store.StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	m := j.Manifest()
	if s, why := CurrentState(ctx, st, m, ""); s != store.StateRunning || why != "" {
		t.Errorf("held job: %s (%s), want running", s, why)
	}
	j.Close()
	s, why := CurrentState(ctx, st, m, "")
	if s != store.StateStale || !strings.Contains(why, "tenax resume "+m.ID) {
		t.Errorf("abandoned job: %s (%s), want stale with the resume command", s, why)
	}
}
