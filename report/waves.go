package report

import (
	"context"
	"fmt"
	"strings"
)

// Wave is one provider batch wave of a job, as its batch ledger tells it.
type Wave struct {
	Wave int
	// Fresh says the wave took every pending item; Items counts the
	// items it carried from the wave before otherwise.
	Fresh bool
	Items int
	// Batches are the batch ids submitted for the wave; Requests their
	// requests; Collected how many of the batches were read.
	Batches   []string
	Requests  int
	Collected int
	// Counts sums the collected batches' final request counts.
	Counts WaveCounts
	// Online counts the items finished online (the online tail).
	Online int
	// Closed says the wave is over; CostUSD and FullCostUSD are then what
	// its answers cost and would have cost online.
	Closed               bool
	CostUSD, FullCostUSD float64
}

// WaveCounts are a wave's requests by how they ended at the provider.
type WaveCounts struct {
	Total, Succeeded, Errored, Expired, Canceled int
}

// Saved is what the wave saved against online calls.
func (w Wave) Saved() float64 { return w.FullCostUSD - w.CostUSD }

// WaveReader reads the provider batch waves of a job, oldest first: none
// for a job that never ran in batch mode. The batch package keeps the
// ledger they are read from and links the providers' SDKs; report
// declares only what it reads, so that a status report links neither,
// and cmd/tenax hands BuildReport job.BatchWaves.
type WaveReader func(ctx context.Context, j Job) ([]Wave, error)

// writeWaves renders the batch waves of a status report: each wave's
// batches, requests and counts, and what it saved.
func writeWaves(b *strings.Builder, waves []Wave) {
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
