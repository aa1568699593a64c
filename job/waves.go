package job

import (
	"context"
	"path/filepath"

	"github.com/tenaxhq/tenax/batch"
	"github.com/tenaxhq/tenax/report"
	"github.com/tenaxhq/tenax/store"
)

// BatchWaves reads the provider batch waves of j from its batch ledger —
// the file in its directory when it offers Dir() string (a JSONL job),
// else the notes of its store (store.Notes) — for report.BuildReport (a
// report.WaveReader). It lives here, not in report, because the ledger is
// batch's, and batch links the providers' SDKs: a status report that
// read it itself would link them too.
func BatchWaves(ctx context.Context, j report.Job) ([]report.Wave, error) {
	var (
		entries []batch.Entry
		err     error
	)
	if d, ok := j.(interface{ Dir() string }); ok {
		entries, err = batch.ReadLedgerFile(filepath.Join(d.Dir(), batch.LedgerFile))
	} else if notes, ok := ledgerNotes(j); ok {
		entries, err = batch.NewNoteLedger(notes).Entries(ctx)
	}
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	var out []report.Wave
	for _, w := range batch.Report(entries) {
		c := w.Counts
		out = append(out, report.Wave{
			Wave: w.Wave, Fresh: w.Fresh, Items: w.Items,
			Batches: w.Batches, Requests: w.Requests, Collected: w.Collected,
			Counts: report.WaveCounts{Total: c.Total, Succeeded: c.Succeeded, Errored: c.Errored, Expired: c.Expired, Canceled: c.Canceled},
			Online: w.Online, Closed: w.Closed, CostUSD: w.CostUSD, FullCostUSD: w.FullCostUSD,
		})
	}
	return out, nil
}

// ledgerNotes finds the notes of a job that keeps them: through the
// wrappers store.Notes looks through when j is a whole store.Job.
func ledgerNotes(j report.Job) (store.NoteKeeper, bool) {
	if sj, ok := j.(store.Job); ok {
		return store.Notes(sj)
	}
	n, ok := j.(store.NoteKeeper)
	return n, ok
}
