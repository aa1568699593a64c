package job

import (
	"context"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/batch"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// TestBatchWavesReadsTheLedgerIntoReportWaves: status reads a batch job's
// waves through job.BatchWaves (report links no batch, hence no SDK); the
// ledger file in the job's directory comes out wave by wave, with its
// counts and costs, and a job without a ledger has none.
func TestBatchWavesReadsTheLedgerIntoReportWaves(t *testing.T) {
	ctx := context.Background()
	st := &jsonl.Store{Home: t.TempDir()}
	j, err := st.Create(ctx, store.Manifest{Created: time.Now(), Items: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if w, err := BatchWaves(ctx, j); err != nil || w != nil {
		t.Fatalf("a job without a ledger: waves %+v, error %v; want none", w, err)
	}
	l, err := batch.OpenFileLedger(j.(*jsonl.Job).Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, e := range []batch.Entry{
		{Kind: batch.KindWave, Wave: 1, Fresh: true},
		{Kind: batch.KindSubmitted, Wave: 1, Batch: "batch_a", CustomIDs: []string{"0", "1", "2"}},
		{Kind: batch.KindCollected, Wave: 1, Batch: "batch_a", Counts: &batch.Counts{Total: 3, Succeeded: 2, Expired: 1}},
		{Kind: batch.KindClosed, Wave: 1, CostUSD: 0.25, FullCostUSD: 0.5},
		{Kind: batch.KindWave, Wave: 2, Items: []batch.ItemState{{Idx: 2}}},
	} {
		if err := l.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	w, err := BatchWaves(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 2 {
		t.Fatalf("waves %+v, want 2", w)
	}
	if a := w[0]; !a.Fresh || a.Requests != 3 || a.Collected != 1 || a.Counts.Succeeded != 2 || a.Counts.Expired != 1 || a.Counts.Total != 3 ||
		!a.Closed || a.CostUSD != 0.25 || a.Saved() != 0.25 || len(a.Batches) != 1 || a.Batches[0] != "batch_a" {
		t.Errorf("wave 1 %+v, want batch_a's 3 requests, 2 succeeded and 1 expired, closed at $0.25 of $0.50", a)
	}
	if b := w[1]; b.Wave != 2 || b.Items != 1 || b.Closed {
		t.Errorf("wave 2 %+v, want one carried item, open", b)
	}
}
