package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBatchExampleRecordsEveryFinishReason runs examples/batch.yaml as it
// ships and reads every record: each has the finish_reason of the answer
// that ended it, the usage and the cost, as an online run's records do.
// Its waves once built records of their own that dropped finish_reason:
// 1,995 of the 2,000 records had none, only the online tail's had it.
func TestBatchExampleRecordsEveryFinishReason(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the 2,000-item batch example; without -short it does")
	}
	w := newWorkdir(t)
	w.examples("batch.yaml", "batch.jsonl")
	r := w.tenax("run", "batch.yaml", "--output", "out.jsonl")
	if r.code != 0 {
		t.Fatalf("tenax run batch.yaml: exit %d, want 0\n%s", r.code, r.stderr)
	}
	recs := readRecords(t, filepath.Join(w.dir, "out.jsonl"))
	if len(recs) != 2000 {
		t.Fatalf("--output holds %d records, want 2000", len(recs))
	}
	var noFinish, noCost, noUsage, retried, healed int
	for _, rec := range recs {
		if rec.FinishReason == "" {
			noFinish++
		}
		if rec.CostUSD == nil || *rec.CostUSD <= 0 {
			noCost++
		}
		if rec.Usage.InputTokens == 0 || rec.Usage.OutputTokens == 0 {
			noUsage++
		}
		if rec.Attempts > 1 {
			retried++
		}
		if rec.HealAttempts > 0 {
			healed++
		}
	}
	if noFinish > 0 || noCost > 0 || noUsage > 0 {
		t.Errorf("of %d records, %d have no finish_reason, %d no cost_usd and %d no usage; want every record to have all three", len(recs), noFinish, noCost, noUsage)
	}
	if retried == 0 || healed == 0 {
		t.Errorf("%d items took more than one wave and %d were re-asked; the example's faults should cause both", retried, healed)
	}
	if !strings.Contains(r.stdout, "2000 succeeded") {
		t.Errorf("the summary does not say all 2000 succeeded:\n%s", r.stdout)
	}
}
