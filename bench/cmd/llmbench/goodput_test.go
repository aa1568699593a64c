package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestRemainingLogReadsTheMockAndSkipsTheRamps: the unused column is the
// median remaining count of the requests that came in the middle 80% of
// a run, read from the answers' headers; the ramp and the tail, where the
// bucket holds what the start and the retries left, are not in it.
func TestRemainingLogReadsTheMockAndSkipsTheRamps(t *testing.T) {
	l := &remainingLog{}
	l.reset(time.Now())
	h := l.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-ratelimit-remaining-requests", r.URL.Query().Get("left"))
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/?left=7", nil))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/?left=", nil)) // no count
	if len(l.left) != 1 || l.left[0] != 7 {
		t.Fatalf("recorded %v, want [7]: the remaining count of each answer that carries one", l.left)
	}
	l.at = []time.Duration{0, 2 * time.Second, 5 * time.Second, 6 * time.Second, 10 * time.Second}
	l.left = []float64{60, 3, 5, 4, 90}
	if got := l.median(10 * time.Second); got != 4 {
		t.Errorf("median %v, want 4: of the counts between 1 s and 9 s of a 10 s run", got)
	}
	if got := (&remainingLog{}).median(time.Second); got != -1 {
		t.Errorf("median of nothing %v, want -1", got)
	}
}
