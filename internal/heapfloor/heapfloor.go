package heapfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// heapMinimum is the runtime's smallest heap goal at GOGC=100
// (defaultHeapMinimum, unchanged since Go 1.5). It scales with the
// percentage: at GOGC=p the goal is never below heapMinimum × p / 100, so a
// percentage set for a small live heap must not pass 100 × floor ÷
// heapMinimum, or the goal would pass the floor by that much (a live heap
// read as 0 before the first collection once gave GOGC 51,200 and a 2 GB
// goal).
const heapMinimum = 4 << 20

// Percent is the GOGC percentage that makes the heap goal the floor,
// given the live heap and the stacks and globals the collector scans (Go
// sets the goal at live + (live+scan) × percent / 100, and no lower than
// heapMinimum × percent / 100), and no lower than base, the percentage
// the process would use otherwise: a live heap of half the floor or more
// keeps base.
func Percent(live, scan, floor uint64, base int) int {
	if base <= 0 || live >= floor {
		return base
	}
	p := 100 * floor / heapMinimum
	if d := live + scan; d > 0 {
		p = min(p, 100*(floor-live)/d)
	}
	return max(base, int(p))
}

// Hold keeps the heap goal at floor bytes or more until release is
// called, which restores the percentage in force when Hold began. It
// reads the live heap after each collection, through runtime/metrics, and
// sets the percentage for the next. It does nothing when the collector is
// off or at 0 (GOGC=off, GOGC=0): those say the memory matters more.
func Hold(floor uint64) (release func()) {
	gogc := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(gogc)
	// GOGC=off reads as the uint64 of -1, which int gives back.
	base := int(gogc[0].Value.Uint64())
	if base <= 0 {
		return func() {}
	}
	h := &holder{floor: floor, base: base, samples: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/scan/stack:bytes"},
		{Name: "/gc/scan/globals:bytes"},
	}}
	h.adjust()
	h.arm()
	return h.release
}

// holder is one Hold: its floor, the percentage to give back, and the
// samples it reads (kept to spare an allocation per collection).
type holder struct {
	floor uint64
	base  int

	mu      sync.Mutex
	done    bool
	set     int
	samples []metrics.Sample
}

// sentinel is allocated for each collection to come: its cleanup runs
// after the collection that finds it unreachable. The pointer keeps it out
// of the tiny allocator, whose shared blocks may never be freed.
type sentinel struct {
	_ *byte
	_ [8]byte
}

// arm waits for the next collection.
func (h *holder) arm() {
	runtime.AddCleanup(new(sentinel), (*holder).collected, h)
}

// collected runs after a collection: it sets the next goal and waits for
// the collection after.
func (h *holder) collected() {
	if h.adjust() {
		h.arm()
	}
}

// adjust sets the percentage for the live heap now, and reports whether
// the hold is still on.
func (h *holder) adjust() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return false
	}
	metrics.Read(h.samples)
	var v [3]uint64
	for i, s := range h.samples {
		if s.Value.Kind() == metrics.KindUint64 {
			v[i] = s.Value.Uint64()
		}
	}
	if p := Percent(v[0], v[1]+v[2], h.floor, h.base); p != h.set {
		debug.SetGCPercent(p)
		h.set = p
	}
	return true
}

// release ends the hold and restores the percentage it found.
func (h *holder) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.done {
		h.done = true
		debug.SetGCPercent(h.base)
	}
}
