package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/tenaxhq/tenax/task"
)

// Tags name one model call of an agent item uniquely and repeatably, for
// a provider that keeps the answers it is asked to (StoringModel): the
// job, the item, its transcript and conversation, the step, and the try
// of that step. A step is asked again after a try that brought no answer
// to keep (a provider's error, a paused turn); each try has its own
// number, so a lookup for the try a dead process sent never finds an
// earlier try's answer, which was judged already.
type Tags struct {
	Job                     string
	Idx, N, Conv, Step, Try int
}

// Metadata is t as a provider's metadata: six keys (OpenAI takes 16) of
// short values (it takes 512 characters each; a job id is far shorter).
func (t Tags) Metadata() map[string]string {
	return map[string]string{
		"tenax_job":  t.Job,
		"tenax_idx":  strconv.Itoa(t.Idx),
		"tenax_n":    strconv.Itoa(t.N),
		"tenax_conv": strconv.Itoa(t.Conv),
		"tenax_step": strconv.Itoa(t.Step),
		"tenax_try":  strconv.Itoa(t.Try),
	}
}

// ErrNotStored is StoringModel.Stored's error when the provider holds no
// answer under the tags (yet, or any more), or could not be asked.
var ErrNotStored = errors.New("agent: no stored answer")

// StoringModel is a Model whose provider keeps each answer it is asked to
// keep, tagged, and finds it again by its tags without charging for it:
// OpenAI's stored chat completions (store: true, metadata; listed with
// GET /v1/chat/completions?metadata[k]=v). With it an answer that
// arrived while the process died, before its bytes reached the step log,
// is read back on resume instead of being paid for again.
type StoringModel interface {
	Model
	// Storing reports whether calls are stored (the spec opted in), and
	// the longest one call may take: how long after a call was sent its
	// answer may still appear.
	Storing() (timeout time.Duration, ok bool)
	// NextStored is Next, the call sent to be stored under tags.
	NextStored(ctx context.Context, item task.Item, defs []Def, steps []Step, tags Tags) (Reply, error)
	// Stored returns the answer stored under tags as Next would have
	// returned it (an unusable final answer with its error), or an error
	// wrapping ErrNotStored when there is none to use.
	Stored(ctx context.Context, item task.Item, tags Tags) (Reply, error)
}

// Bounds of the wait for an answer a dead process was sent.
const (
	// storedGrace is added to the call's timeout: a provider lists a
	// stored answer a moment after it answered.
	storedGrace = 5 * time.Second
	// storedPollMin and storedPollMax bound the pause between lookups,
	// doubled after each.
	storedPollMin = 200 * time.Millisecond
	storedPollMax = 5 * time.Second
)

// storing returns the task's model as a StoringModel when its calls are
// stored.
func (t *Task) storing() (StoringModel, time.Duration, bool) {
	sm, ok := t.cfg.Model.(StoringModel)
	if !ok {
		return nil, 0, false
	}
	timeout, ok := sm.Storing()
	return sm, timeout, ok
}

// askStored asks the model for step n with the call stored under tags,
// after an ask mark in the journal. When the journal's latest mark of
// the step is a try another run sent and no process finished (its
// process died with the call in flight), the provider is asked for that
// try's answer first, and waited for while the call may still be running
// (until its timeout, and storedGrace, from the moment it was sent); an
// answer found is used as if just received, and costs nothing again.
func (t *Task) askStored(ctx context.Context, item task.Item, l *loop, n int, sm StoringModel, timeout time.Duration) (Reply, error) {
	tags := Tags{Job: t.job, Idx: item.Idx, N: l.j.n, Conv: l.j.conv, Step: n}
	if last := l.j.asks[n]; last != nil {
		tags.Try = last.Try
		if last.Run != t.run {
			sentAt := time.UnixMilli(last.At)
			rep, err := recall(ctx, sm, item, tags, sentAt.Add(timeout+storedGrace))
			if !errors.Is(err, ErrNotStored) {
				return rep, err
			}
		}
	}
	tags.Try++
	mark := l.j.askEntry(n, tags.Try, t.run, time.Now())
	// The mark is written before the call is sent, and the call only if
	// it was: a call the provider may hold always has its mark. It need
	// not be fsynced for kill -9 (written bytes outlive the process) but
	// the StepLog has one durable append, which costs one fsync per model
	// call, and only with store on.
	if err := l.j.append(ctx, mark); err != nil {
		return Reply{}, err
	}
	l.j.asks[n] = mark
	return sm.NextStored(ctx, item, t.defs, t.bounded(l.steps), tags)
}

// recall looks the answer under tags up, again with a growing pause
// while it is not there and until is to come. ctx's end ends it.
func recall(ctx context.Context, sm StoringModel, item task.Item, tags Tags, until time.Time) (Reply, error) {
	pause := storedPollMin
	for {
		rep, err := sm.Stored(ctx, item, tags)
		if !errors.Is(err, ErrNotStored) {
			return rep, err
		}
		left := time.Until(until)
		if left <= 0 {
			return Reply{}, err
		}
		timer := time.NewTimer(min(pause, left))
		select {
		case <-ctx.Done():
			timer.Stop()
			return Reply{}, fmt.Errorf("agent: waiting for a stored answer: %w", ctx.Err())
		case <-timer.C:
		}
		pause = min(2*pause, storedPollMax)
	}
}
