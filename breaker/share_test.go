package breaker_test

import (
	"testing"

	"github.com/tenaxhq/tenax/breaker"
)

func TestShareTripsOnALargeShareOfOneError(t *testing.T) {
	cases := []struct {
		name     string
		share    breaker.Share
		total    int
		failures map[string]int
		want     string
		wantN    int
	}{
		{"half of ten with one error trips", breaker.Share{Share: 0.5, Minimum: 5}, 10, map[string]int{"credit": 5}, "credit", 5},
		{"below the share does not trip", breaker.Share{Share: 0.5, Minimum: 5}, 12, map[string]int{"credit": 5}, "", 0},
		{"below the minimum does not trip", breaker.Share{Share: 0.5, Minimum: 5}, 4, map[string]int{"credit": 4}, "", 0},
		{"two errors do not add up", breaker.Share{Share: 0.5, Minimum: 2}, 10, map[string]int{"a": 3, "b": 3}, "", 0},
		{"ties go to the smaller fingerprint", breaker.Share{Share: 0.4, Minimum: 2}, 10, map[string]int{"b": 4, "a": 4}, "a", 4},
		{"no failures", breaker.Share{Share: 0.5, Minimum: 0}, 10, nil, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fp, n, ok := c.share.Trips(c.total, c.failures)
			if fp != c.want || n != c.wantN || ok != (c.want != "") {
				t.Errorf("Trips(%d, %v) = %q, %d, %v; want %q, %d, %v", c.total, c.failures, fp, n, ok, c.want, c.wantN, c.want != "")
			}
		})
	}
}
