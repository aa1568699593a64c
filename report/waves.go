package report

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tenaxhq/tenax/batch"
	"github.com/tenaxhq/tenax/store"
)

// batchWaves reads the job's batch ledger, if it has one: a file in its
// directory, or notes in its store.
func batchWaves(ctx context.Context, j Job) ([]batch.WaveReport, error) {
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
	return batch.Report(entries), nil
}

// ledgerNotes finds the notes of a job that keeps them: through the
// wrappers store.Notes looks through when j is a whole store.Job.
func ledgerNotes(j Job) (store.NoteKeeper, bool) {
	if sj, ok := j.(store.Job); ok {
		return store.Notes(sj)
	}
	n, ok := j.(store.NoteKeeper)
	return n, ok
}

// writeWaves renders the batch waves of a status report: each wave's
// batches, requests and counts, and what it saved.
func writeWaves(b *strings.Builder, waves []batch.WaveReport) {
	if len(waves) == 0 {
		return
	}
	var batches, requests int
	var cost, full float64
	for _, w := range waves {
		batches += len(w.Batches)
		requests += w.Requests
		cost += w.CostUSD
		full += w.FullCostUSD
	}
	fmt.Fprintf(b, "Batches:   %d wave(s), %d batch(es), %d requests", len(waves), batches, requests)
	if full > 0 {
		fmt.Fprintf(b, " | batch price $%.4f, online $%.4f, saved $%.4f", cost, full, full-cost)
	}
	b.WriteByte('\n')
	for _, w := range waves {
		fmt.Fprintf(b, "  wave %d: ", w.Wave)
		switch {
		case w.Online > 0:
			fmt.Fprintf(b, "%d item(s) finished online", w.Online)
		case len(w.Batches) == 0 && !w.Closed:
			fmt.Fprintf(b, "%d item(s) waiting to be submitted (resume submits them)", w.Items)
		default:
			c := w.Counts
			fmt.Fprintf(b, "%d request(s) in %s", w.Requests, strings.Join(w.Batches, ", "))
			if w.Collected > 0 {
				fmt.Fprintf(b, "; %d succeeded, %d errored", c.Succeeded, c.Errored)
				if c.Expired > 0 {
					fmt.Fprintf(b, ", %d expired", c.Expired)
				}
				if c.Canceled > 0 {
					fmt.Fprintf(b, ", %d canceled", c.Canceled)
				}
			}
			if !w.Closed {
				fmt.Fprintf(b, " (open: %d of %d batch(es) read; resume polls the rest)", w.Collected, len(w.Batches))
			}
		}
		if w.FullCostUSD > 0 {
			fmt.Fprintf(b, " | saved $%.4f", w.Saved())
		}
		b.WriteByte('\n')
	}
}
