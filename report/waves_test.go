package report

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// TestBuildReportReadsWavesThroughItsReader: report no longer reads the
// batch ledger itself (that linked the providers' SDKs); the waves come
// from the WaveReader it is given, for the job it reads, into the text
// and the JSON, and the reader's error is the report's.
func TestBuildReportReadsWavesThroughItsReader(t *testing.T) {
	ctx := context.Background()
	st := &jsonl.Store{Home: t.TempDir()}
	j, err := st.Create(ctx, store.Manifest{Created: time.Now(), Items: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	waves := []Wave{
		{Wave: 1, Fresh: true, Batches: []string{"batch_a"}, Requests: 3, Collected: 1,
			Counts: WaveCounts{Total: 3, Succeeded: 2, Errored: 1}, Closed: true, CostUSD: 0.5, FullCostUSD: 1},
		{Wave: 2, Items: 1, Online: 1, Closed: true},
	}
	var asked Job
	r, err := BuildReport(ctx, j, func(_ context.Context, of Job) ([]Wave, error) {
		asked = of
		return waves, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if asked != Job(j) {
		t.Errorf("the reader was asked for %v, want the job the report reads", asked)
	}
	if len(r.Waves) != 2 || r.Waves[0].Counts.Errored != 1 {
		t.Fatalf("report waves %+v, want the reader's two", r.Waves)
	}
	var b strings.Builder
	if err := r.WriteText(&b, 10); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Batches:   2 wave(s), 1 batch(es), 3 requests | batch price $0.5000, online $1.0000, saved $0.5000",
		"wave 1: 3 request(s) in batch_a; 2 succeeded, 1 errored | saved $0.5000",
		"wave 2: 1 item(s) finished online",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status text lacks %q:\n%s", want, b.String())
		}
	}
	if js := r.JSON(); len(js.Waves) != 2 || js.Waves[0].FullCostUSD != 1 {
		t.Errorf("status JSON waves %+v, want the two waves", js.Waves)
	}

	damaged := errors.New("ledger line 2 is damaged")
	if _, err := BuildReport(ctx, j, func(context.Context, Job) ([]Wave, error) { return nil, damaged }); !errors.Is(err, damaged) {
		t.Errorf("a reader's error: BuildReport returned %v, want it", err)
	}
	if r, err := BuildReport(ctx, j, nil); err != nil || r.Waves != nil {
		t.Errorf("no reader: waves %+v, error %v; want none and no error", r.Waves, err)
	}
}
