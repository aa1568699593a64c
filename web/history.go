package web

import (
	"context"

	"github.com/tenaxhq/tenax/store"
)

// maxHistory bounds the records an item's page shows: the latest ones.
// An item re-run from the page a few times has a handful; the bound keeps
// a pathological one (re-run thousands of times) from making the page
// unreadable.
const maxHistory = 50

// historyEntry is one record of an item's history, numbered from 1 in the
// order it was written.
type historyEntry struct {
	N      int
	Latest bool
	Rec    store.Record
}

// itemHistory reads every record of item idx of job id, oldest first,
// keeping the latest maxHistory; dropped counts the older ones left out.
// ok is false when the store keeps no history (it is no store.Historian).
func itemHistory(ctx context.Context, st store.Store, id string, idx int) (h []historyEntry, dropped int, ok bool, err error) {
	j, err := st.OpenReadOnly(ctx, id)
	if err != nil {
		return nil, 0, false, err
	}
	defer j.Close()
	hs, ok := j.(store.Historian)
	if !ok {
		return nil, 0, false, nil
	}
	n := 0
	err = hs.History(ctx, idx, func(rec store.Record) error {
		n++
		if len(h) == maxHistory {
			copy(h, h[1:])
			h = h[:maxHistory-1]
			dropped++
		}
		h = append(h, historyEntry{N: n, Rec: rec})
		return nil
	})
	if err != nil {
		return nil, 0, true, err
	}
	if len(h) > 0 {
		h[len(h)-1].Latest = true
	}
	return h, dropped, true, nil
}
