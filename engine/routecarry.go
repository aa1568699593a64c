package engine

import (
	"slices"

	"github.com/tenaxhq/tenax/store"
)

// Start is the routing of an item that left the routes of tries before
// (a batch job's waves, a wave read back from its ledger, the online
// tail): they lead its record's tries and count as tried, so that
// fallbacks.outage sends it to a route it has not left while one remains,
// and each try's fallback (Try.Fallback) still says what the item needs:
// a larger context window, another provider, a tier above the route's.
func (rs *Routes) Start(tries []store.Try) ItemRoute {
	var ir ItemRoute
	if len(tries) == 0 || len(rs.list) == 0 {
		return ir
	}
	ir.tries = slices.Clone(tries)
	ir.tried = make([]bool, len(rs.list))
	for _, r := range rs.list {
		ir.tried[r.idx] = slices.ContainsFunc(tries, func(t store.Try) bool { return t.Route == r.Name })
	}
	if !slices.Contains(ir.tried, false) {
		// Every route was left: none is excluded, as after a full round.
		clear(ir.tried)
	}
	for _, t := range tries {
		rs.leftBy(&ir, t)
	}
	return ir
}

// leftBy applies the fallback that moved the item off a route (Try.Fallback)
// to its next pick.
func (rs *Routes) leftBy(ir *ItemRoute, t store.Try) {
	if t.Fallback == "" {
		return
	}
	i := rs.Index(t.Route)
	if i < 0 {
		return
	}
	from := rs.list[i]
	switch t.Fallback {
	case FallbackContextWindow:
		ir.window = max(ir.window, from.ContextWindow, 1)
	case FallbackContentFilter:
		ir.provider = from.Provider
	case FallbackEscalate:
		up := -1
		for _, r := range rs.list {
			if r.Tier > from.Tier && (up < 0 || r.Tier < up) {
				up = r.Tier
			}
		}
		if up >= 0 {
			ir.minTier = max(ir.minTier, up)
		}
	}
}
