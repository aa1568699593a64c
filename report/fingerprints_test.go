package report

import (
	"context"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/store"
)

// repeatedFailures is a job of n failed items that all carry one long
// message and no fingerprint, as a tenax before fingerprints were kept
// wrote them.
type repeatedFailures struct {
	n   int
	msg string
}

func (j repeatedFailures) Manifest() store.Manifest { return store.Manifest{ID: "job_1", Items: j.n} }

func (j repeatedFailures) Scan(_ context.Context, fn func(store.Record) error) error {
	for i := range j.n {
		if err := fn(store.Record{Idx: i, Error: j.msg, Class: classify.Item, Attempts: 1}); err != nil {
			return err
		}
	}
	return nil
}

// TestStatusNormalizesEachRepeatedMessageOnce: status on a million-item
// job whose 100,000 failures had no stored fingerprint took 69 s of CPU,
// normalizing the same 2 KB message through every regexp once per
// failure. The allocations of a report over 2,000 such failures against
// one over 20 show the per-failure work: normalizing allocates, a
// remembered fingerprint does not.
func TestStatusNormalizesEachRepeatedMessageOnce(t *testing.T) {
	msg := "HTTP 422 at 2026-11-23T00:00:00Z from /v1/items/7: " + strings.Repeat("unprocessable 12 ", 120)
	allocs := func(n int) float64 {
		j := repeatedFailures{n: n, msg: msg}
		return testing.AllocsPerRun(3, func() {
			if _, err := BuildReport(context.Background(), j, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := allocs(20), allocs(2000)
	if perFailure := (large - small) / 1980; perFailure >= 0.5 {
		t.Errorf("a report allocates %.1f times per further failure of a repeated message (%.0f for 20 failures, %.0f for 2000): each failure is normalized again", perFailure, small, large)
	}
	r, err := BuildReport(context.Background(), repeatedFailures{n: 3, msg: msg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := heal.Fingerprint(classify.Item.String(), msg); len(r.Groups) != 1 || r.Groups[0].Fingerprint != want || r.Groups[0].Count != 3 {
		t.Errorf("groups %+v, want one group of 3 with fingerprint %s", r.Groups, want)
	}
}
