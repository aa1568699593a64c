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
