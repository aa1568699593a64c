package retry

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestJitterStaysInBounds(t *testing.T) {
	const draws = 10_000
	b := Backoff{Base: time.Second, Multiplier: 2, Max: time.Minute}
	// Retry 3 without jitter waits 4s.
	tests := []struct {
		name   string
		jitter Jitter
		prev   time.Duration
		lo, hi time.Duration // the draws lie in [lo, hi]
	}{
		{"proportional is d times U(0.5,1.5)", JitterProportional, 0, 2 * time.Second, 6 * time.Second},
		{"full is U(0,d)", JitterFull, 0, 0, 4 * time.Second},
		{"equal is d/2 plus U(0,d/2)", JitterEqual, 0, 2 * time.Second, 4 * time.Second},
		{"decorrelated is U(base, 3 prev)", JitterDecorrelated, 5 * time.Second, time.Second, 15 * time.Second},
		{"decorrelated starts from base", JitterDecorrelated, 0, time.Second, 3 * time.Second},
		{"decorrelated is capped at max", JitterDecorrelated, 50 * time.Second, time.Second, time.Minute},
		{"none is d", JitterNone, 0, 4 * time.Second, 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := b
			b.Jitter = tt.jitter
			rnd := rand.New(rand.NewPCG(1, 2))
			lowest, highest := time.Duration(math.MaxInt64), time.Duration(0)
			for range draws {
				d := b.Delay(3, tt.prev, rnd)
				if d < tt.lo || d > tt.hi {
					t.Fatalf("Delay(3, %v) with %s jitter = %v, want within [%v, %v]", tt.prev, tt.jitter, d, tt.lo, tt.hi)
				}
				lowest, highest = min(lowest, d), max(highest, d)
			}
			// The draws must also use the range, not sit in one spot.
			if slack := (tt.hi - tt.lo) / 20; lowest > tt.lo+slack || highest < tt.hi-slack {
				t.Errorf("%d draws spanned [%v, %v], want close to the whole of [%v, %v]", draws, lowest, highest, tt.lo, tt.hi)
			}
		})
	}
}

func TestDelayIsClampedToMinAndMax(t *testing.T) {
	tests := []struct {
		name   string
		b      Backoff
		n      int
		lo, hi time.Duration
	}{
		{"min lifts full jitter's small draws", Backoff{Base: 4 * time.Second, Min: 3 * time.Second, Jitter: JitterFull}, 1, 3 * time.Second, 4 * time.Second},
		{"max caps proportional jitter's large draws", Backoff{Base: 4 * time.Second, Max: 5 * time.Second}, 1, 2 * time.Second, 5 * time.Second},
		{"max caps a long streak", Backoff{Base: time.Second, Max: 10 * time.Second, Jitter: JitterEqual}, 50, 5 * time.Second, 10 * time.Second},
		{"max wins over a larger min", Backoff{Base: time.Second, Min: 20 * time.Second, Max: 10 * time.Second}, 1, 10 * time.Second, 10 * time.Second},
		{"default max is 60s", Backoff{Jitter: JitterProportional}, 100, 30 * time.Second, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(3, 4))
			for range 10_000 {
				if d := tt.b.Delay(tt.n, 0, rnd); d < tt.lo || d > tt.hi {
					t.Fatalf("%+v.Delay(%d) = %v, want within [%v, %v]", tt.b, tt.n, d, tt.lo, tt.hi)
				}
			}
		})
	}
}

func TestDelayGrowsExponentiallyUpToMax(t *testing.T) {
	tests := []struct {
		name string
		b    Backoff
		n    int
		want time.Duration
	}{
		{"defaults, first retry waits base", Backoff{Jitter: JitterNone}, 1, time.Second},
		{"defaults, second retry doubles", Backoff{Jitter: JitterNone}, 2, 2 * time.Second},
		{"defaults, sixth retry", Backoff{Jitter: JitterNone}, 6, 32 * time.Second},
		{"defaults, seventh retry hits max", Backoff{Jitter: JitterNone}, 7, time.Minute},
		{"n below 1 is the first retry", Backoff{Jitter: JitterNone}, 0, time.Second},
		{"huge n gives max without overflow", Backoff{Jitter: JitterNone}, math.MaxInt, time.Minute},
		{"huge n with huge max", Backoff{Jitter: JitterNone, Max: math.MaxInt64}, math.MaxInt, math.MaxInt64},
		{"multiplier 1 is constant", Backoff{Base: 3 * time.Second, Multiplier: 1, Jitter: JitterNone}, 9, 3 * time.Second},
		{"fractional multiplier", Backoff{Base: 2 * time.Second, Multiplier: 1.5, Jitter: JitterNone}, 3, 4500 * time.Millisecond},
		{"proportional jitter saturates, then max", Backoff{Max: math.MaxInt64}, math.MaxInt, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// proportional's top draw would be 1.5 × MaxInt64: it must
			// saturate, not wrap negative.
			rnd := rand.New(rand.NewPCG(5, 6))
			got := tt.b.Delay(tt.n, 0, rnd)
			if tt.b.Jitter == JitterProportional {
				if got < tt.want/2 || got > tt.want {
					t.Errorf("%+v.Delay(%d) = %v, want within [%v, %v]", tt.b, tt.n, got, tt.want/2, tt.want)
				}
				return
			}
			if got != tt.want {
				t.Errorf("%+v.Delay(%d) = %v, want %v", tt.b, tt.n, got, tt.want)
			}
		})
	}
}

func TestScheduleOfNothingIsEmpty(t *testing.T) {
	if s := (Backoff{}).Schedule(0); s != nil {
		t.Errorf("Schedule(0) = %v, want nil", s)
	}
}

func TestScheduleRespectsMin(t *testing.T) {
	got := Backoff{Base: time.Second, Min: 3 * time.Second, Max: 10 * time.Second}.Schedule(5)
	want := []time.Duration{3 * time.Second, 3 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Schedule(5) = %v, want %v", got, want)
		}
	}
}

func TestJitterNamesRoundTrip(t *testing.T) {
	for _, j := range []Jitter{JitterProportional, JitterFull, JitterEqual, JitterDecorrelated, JitterNone} {
		text, err := j.MarshalText()
		if err != nil {
			t.Fatalf("%v.MarshalText: %v", j, err)
		}
		var back Jitter = 200
		if err := back.UnmarshalText(text); err != nil {
			t.Fatalf("UnmarshalText(%q): %v", text, err)
		}
		if back != j || string(text) != j.String() {
			t.Errorf("%d marshals as %q and reads back as %d (%s)", j, text, back, back)
		}
	}
}

func TestParseJitter(t *testing.T) {
	tests := []struct {
		in      string
		want    Jitter
		wantErr bool
	}{
		{"", JitterProportional, false},
		{"proportional", JitterProportional, false},
		{"full", JitterFull, false},
		{"equal", JitterEqual, false},
		{"decorrelated", JitterDecorrelated, false},
		{"none", JitterNone, false},
		{"Full", 0, true},
		{"exponential", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseJitter(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("ParseJitter(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	if _, err := Jitter(99).MarshalText(); err == nil {
		t.Error("MarshalText of an unknown jitter succeeded, want an error")
	}
}
