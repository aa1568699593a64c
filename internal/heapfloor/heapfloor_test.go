package heapfloor_test

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/internal/heapfloor"
)

const mb = 1 << 20

func TestPercentMakesTheGoalReachTheFloor(t *testing.T) {
	cases := []struct {
		name              string
		live, scan, floor uint64
		base, want        int
	}{
		{"a small heap is given the floor", 2 * mb, mb / 2, 32 * mb, 100, 800},
		{"a heap near half the floor is given it by its own size", 12 * mb, 4 * mb, 32 * mb, 100, 125},
		{"a heap too small to count keeps the runtime's minimum under the floor", 2 * mb, mb / 2, 64 * mb, 100, 1600},
		{"a heap at the floor keeps its setting", 64 * mb, mb, 64 * mb, 100, 100},
		{"a heap past the floor keeps its setting", 200 * mb, mb, 64 * mb, 100, 100},
		{"never below the user's own percentage", 40 * mb, 0, 64 * mb, 200, 200},
		{"an empty heap (no collection yet) gets the minimum at the floor", 0, 0, 64 * mb, 100, 1600},
		{"a tiny heap gets the minimum at the floor", 1024, 0, 64 * mb, 100, 1600},
		{"a floor under the runtime's minimum changes nothing", 1024, 0, 2 * mb, 100, 100},
		{"the collector off stays off", 2 * mb, 0, 64 * mb, -1, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := heapfloor.Percent(c.live, c.scan, c.floor, c.base)
			if got != c.want {
				t.Fatalf("Percent(live %d, scan %d, floor %d, base %d) = %d, want %d", c.live, c.scan, c.floor, c.base, got, c.want)
			}
			if got > c.base && c.base > 0 {
				// The runtime's goal at that percentage: the floor, within
				// the rounding of one percent.
				goal := max(4*mb*uint64(got)/100, c.live+(c.live+c.scan)*uint64(got)/100)
				if goal > c.floor || c.floor-goal > (c.live+c.scan)/100+4*mb/100 {
					t.Errorf("percent %d gives a goal of %d bytes; want the floor, %d", got, goal, c.floor)
				}
			}
		})
	}
}

// read returns the runtime's GOGC percentage and heap goal.
func read() (percent int, goal uint64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64()), s[1].Value.Uint64()
}

// collectUntil runs collections until ok holds (the hold adjusts in a
// cleanup, after the collection), or fails after a safety net that no
// healthy run comes near.
func collectUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !ok(); {
		if time.Now().After(deadline) {
			p, g := read()
			t.Fatalf("%s: still not so after a minute of collections (GOGC %d, goal %d bytes)", what, p, g)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

func TestHoldRaisesTheGoalOfASmallHeapAndReleaseRestoresIt(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	release := heapfloor.Hold(64 * mb)
	collectUntil(t, "the goal at the floor", func() bool { _, g := read(); return g >= 64*mb })
	if p, _ := read(); p <= 100 {
		t.Errorf("GOGC is %d with a goal at the floor; want it raised above 100", p)
	}
	release()
	if p, _ := read(); p != 100 {
		t.Fatalf("GOGC is %d after release; want 100, as before the hold", p)
	}
	// The cleanup chain has ended: later collections leave it alone.
	for range 5 {
		runtime.GC()
	}
	time.Sleep(10 * time.Millisecond)
	if p, _ := read(); p != 100 {
		t.Errorf("GOGC is %d some collections after release; want 100", p)
	}
}

func TestHoldLeavesALargeHeapAlone(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	big := make([]byte, 80*mb)
	release := heapfloor.Hold(64 * mb)
	defer release()
	collections := 0
	collectUntil(t, "five collections seen by the hold", func() bool { collections++; return collections > 5 })
	if p, _ := read(); p != 100 {
		t.Errorf("GOGC is %d with 80 MB live and a 64 MB floor; want 100: a large heap collects as it did", p)
	}
	runtime.KeepAlive(big)
}

func TestHoldObeysTheCollectorOff(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	release := heapfloor.Hold(64 * mb)
	runtime.GC()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Errorf("GOGC is %d after Hold with the collector off; want it left off", p)
	}
	release()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Errorf("GOGC is %d after release with the collector off; want it left off", p)
	}
}

func ExamplePercent() {
	// 2 MB live, 0.5 MB of stacks and globals, a 32 MB floor: at GOGC 800
	// the runtime's minimum goal, 4 MB × 8, is the floor, and the live
	// heap's own, 2 MB + 2.5 MB × 8 = 22 MB, is under it.
	fmt.Println(heapfloor.Percent(2<<20, 512<<10, 32<<20, 100))
	// Output: 800
}

func ExampleHold() {
	// From a program's main, unless the user set GOGC:
	release := heapfloor.Hold(32 << 20)
	defer release()
	// … the program's work, collected once per 30 MB allocated or so
	// rather than once per 4 MB.
}
