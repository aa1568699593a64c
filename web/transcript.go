package web

import (
	"context"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task/agent"
)

// maxTranscriptSteps bounds the steps an item's page shows: an agent
// runs at most max_steps per conversation, but a heal loop's re-asks add
// conversations.
const maxTranscriptSteps = 200

// transcriptData is an agent item's transcript as its page shows it.
type transcriptData struct {
	// Log names the step log (steps.jsonl, tenax_notes), N the
	// transcript's number in it.
	Log string
	N   int
	// Steps are the transcript's steps, the first maxTranscriptSteps;
	// Dropped counts those left out.
	Steps   []agent.TranscriptStep
	Dropped int
	Err     string
}

// itemTranscript reads item idx's agent transcript n (0: the latest) from
// the job's step log (store.StepLog), nil when the job keeps no steps or
// the item has none.
func itemTranscript(ctx context.Context, st store.Store, id string, idx, n int) *transcriptData {
	j, err := st.OpenReadOnly(ctx, id)
	if err != nil {
		return &transcriptData{Err: err.Error()}
	}
	defer j.Close()
	log, ok := store.StepsOf(j)
	if !ok {
		return nil
	}
	raw, err := log.Steps(ctx, idx)
	if err != nil {
		return &transcriptData{Log: log.StepsLocation(), Err: err.Error()}
	}
	if len(raw) == 0 {
		return nil
	}
	steps, n, err := agent.ReadTranscript(raw, n)
	d := &transcriptData{Log: log.StepsLocation(), N: n, Steps: steps}
	if err != nil {
		d.Err = err.Error()
	}
	if len(d.Steps) > maxTranscriptSteps {
		d.Dropped = len(d.Steps) - maxTranscriptSteps
		d.Steps = d.Steps[:maxTranscriptSteps]
	}
	return d
}

// redact takes a live run's secrets out of the transcript, as from its
// records and events.
func (d *transcriptData) redact(text func(string) string) {
	for i := range d.Steps {
		s := &d.Steps[i]
		s.Text, s.Error, s.Output = text(s.Text), text(s.Error), []byte(text(string(s.Output)))
		for k := range s.Calls {
			c := &s.Calls[k]
			c.Arguments, c.Result = text(c.Arguments), text(c.Result)
		}
	}
}
