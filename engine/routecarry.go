package engine

import (
	"slices"

	"github.com/tenaxhq/tenax/store"
)

// carry starts the item's routing from the routes it left before this
// engine ran it (Carried.Tries): they lead its record's tries, and count
// as tried, so that fallbacks.outage sends it to a route it has not left
// while one remains.
func (ir *itemRoute) carry(routes []*route, tries []store.Try) {
	if len(tries) == 0 || len(routes) == 0 {
		return
	}
	ir.tries = slices.Clone(tries)
	ir.tried = make([]bool, len(routes))
	for _, r := range routes {
		ir.tried[r.idx] = slices.ContainsFunc(tries, func(t store.Try) bool { return t.Route == r.Name })
	}
	if !slices.Contains(ir.tried, false) {
		// Every route was left: none is excluded, as after a full round.
		clear(ir.tried)
	}
}

// leftBy applies a fallback the item's waves met on a route (Carried.Left)
// to its next pick: a larger context window, another provider, or a tier
// above the route's.
func (ir *itemRoute) leftBy(routes []*route, l *Left) {
	if l == nil {
		return
	}
	var from *route
	for _, r := range routes {
		if r.Name == l.Route {
			from = r
		}
	}
	if from == nil {
		return
	}
	switch l.Kind {
	case FallbackContextWindow:
		ir.window = max(ir.window, from.ContextWindow, 1)
	case FallbackContentFilter:
		ir.provider = from.Provider
	case FallbackEscalate:
		up := -1
		for _, r := range routes {
			if r.Tier > from.Tier && (up < 0 || r.Tier < up) {
				up = r.Tier
			}
		}
		if up >= 0 {
			ir.minTier = up
		}
	}
}
