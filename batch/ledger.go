package batch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// Ledger is where waves and batch ids are made durable before anything
// depends on them: a wave's items before its first batch is submitted, a
// batch's id and custom ids before it is polled. A resume reads it back to
// re-poll the batches it knows and never submit them again. The records
// of items stay in the job's store; the ledger holds only what is in
// flight.
type Ledger interface {
	// Append makes e durable before it returns.
	Append(ctx context.Context, e Entry) error
	// Entries returns every entry appended so far, oldest first.
	Entries(ctx context.Context) ([]Entry, error)
}

// The kinds of Entry.
const (
	// KindWave opens a wave: the items it holds (or, Fresh, every pending
	// item) with their state before the wave.
	KindWave = "wave"
	// KindIntent records a batch about to be created for the wave: its
	// key (the label it carries at the provider, where the provider has
	// labels) and its requests' custom ids. An intent without a submitted
	// entry is a batch that may exist without its id in the ledger; a
	// resume looks for it by its key before submitting its requests again.
	KindIntent = "intent"
	// KindSubmitted records a batch created for the wave, with its
	// requests' custom ids.
	KindSubmitted = "submitted"
	// KindCollected records that a batch's results were read and applied,
	// with what it cost and would have cost online.
	KindCollected = "collected"
	// KindClosed closes a wave: every item has its record or is carried
	// into the next wave's entry.
	KindClosed = "closed"
)

// Entry is one line of the ledger.
type Entry struct {
	Kind string    `json:"kind"`
	Wave int       `json:"wave"`
	At   time.Time `json:"at"`

	// Fresh (wave) says the wave took every pending item of the job.
	Fresh bool `json:"fresh,omitempty"`
	// Items (wave) are the states of the wave's items when not Fresh.
	Items []ItemState `json:"items,omitempty"`

	// Key (intent, submitted) names the submission: job, wave and chunk
	// ("<job>-w<wave>-c<chunk>"), sent as the batch's metadata where the
	// provider takes it.
	Key string `json:"key,omitempty"`
	// Batch (submitted, collected) is the provider's batch id.
	Batch string `json:"batch,omitempty"`
	// Provider (submitted) is the task's provider.
	Provider string `json:"provider,omitempty"`
	// Route (intent, submitted) is the route the batch went to, in a
	// routed job: a resume polls it there.
	Route string `json:"route,omitempty"`
	// CustomIDs (intent, submitted) are the batch's requests.
	CustomIDs []string `json:"custom_ids,omitempty"`

	// Counts (collected) are the batch's final request counts.
	Counts *Counts `json:"counts,omitempty"`
	// CostUSD (collected) is what the batch's answers cost at the batch
	// price; FullCostUSD what they would have cost online.
	CostUSD     float64 `json:"cost_usd,omitempty"`
	FullCostUSD float64 `json:"full_cost_usd,omitempty"`
	// Online (closed) counts the items the wave finished online (the
	// online tail).
	Online int `json:"online,omitempty"`
}

// ItemState is an item between waves: everything its record will need
// and its next request depends on.
type ItemState struct {
	Idx int `json:"idx"`
	// Calls counts the waves (and online calls) the item was in: its
	// record's attempts.
	Calls       int `json:"calls"`
	Heals       int `json:"heals,omitempty"`
	Generations int `json:"generations,omitempty"`
	// Failures is the item's retry streak when the entry was written:
	// its consecutive retryable failures (expired requests included), as
	// its retry.Retrier counted them, which a resume's Retrier continues.
	Failures  int        `json:"streak,omitempty"`
	Usage     task.Usage `json:"usage"`
	CostUSD   float64    `json:"cost_usd,omitempty"`
	CostKnown bool       `json:"cost_known,omitempty"`
	Started   time.Time  `json:"started"`
	// FinishReason is the last answer's finish reason, RateLimited the
	// item's answers that were a 429: the record's finish_reason and
	// rate_limited.
	FinishReason string          `json:"finish_reason,omitempty"`
	RateLimited  int             `json:"rate_limited,omitempty"`
	Tracker      json.RawMessage `json:"tracker,omitempty"` // a heal.Tracker's state
	Feedback     *task.Feedback  `json:"feedback,omitempty"`
	// LastOutput is the last output, for a failure's record.
	LastOutput json.RawMessage `json:"last_output,omitempty"`
	// LastError is the last error's text, for reports.
	LastError string `json:"last_error,omitempty"`
	// RetryAt is when the item's retry delay (the backoff, or the
	// server's hint capped by retry.max_hint) ends: its next request is
	// not sent before.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// Route is the route the item's next request goes to, in a routed
	// job; Tries the routes it left, with the error that moved it.
	Route string      `json:"route,omitempty"`
	Tries []store.Try `json:"tries,omitempty"`
	// RetrySince is when the item's retry streak began counting
	// retry.max_elapsed, when not at Started (a fresh streak on another
	// route).
	RetrySince time.Time `json:"retry_since,omitzero"`
	// Left is what a ledger of an earlier version wrote for an item a
	// fallback that wants another kind of route moved: its tries now
	// say so (store.Try.Fallback), and tries reads it into them.
	Left *leftRoute `json:"left,omitempty"`
}

// leftRoute is an earlier version's ItemState.Left: the route an item
// left and the fallback's kind.
type leftRoute struct {
	Route string `json:"route"`
	Kind  string `json:"kind"`
}

// tries are the routes the item left, with a ledger's Left read into the
// last try of its route.
func (st ItemState) tries() []store.Try {
	if st.Left == nil {
		return st.Tries
	}
	tries := slices.Clone(st.Tries)
	for i := len(tries) - 1; i >= 0; i-- {
		if tries[i].Route == st.Left.Route {
			tries[i].Fallback = st.Left.Kind
			break
		}
	}
	return tries
}

// LedgerFile is the name of the file ledger in a job directory.
const LedgerFile = "batches.jsonl"

// FileLedger is a Ledger in a JSONL file, fsynced at every append. A torn
// last line (a crash mid-append) is ignored when read.
type FileLedger struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

// OpenFileLedger opens (creating when missing) the ledger file of a job
// directory.
func OpenFileLedger(dir string) (*FileLedger, error) {
	path := filepath.Join(dir, LedgerFile)
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("batch: ledger: %w", err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		// The new file's directory entry must be durable too.
		if d, err := os.Open(dir); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	return &FileLedger{path: path, f: f}, nil
}

// Path returns the ledger file's path.
func (l *FileLedger) Path() string { return l.path }

// Append writes e as a line and fsyncs the file.
func (l *FileLedger) Append(_ context.Context, e Entry) error {
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("batch: ledger: %w", err)
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("batch: ledger is closed")
	}
	if _, err := l.f.Write(b); err != nil {
		return fmt.Errorf("batch: ledger: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("batch: ledger: %w", err)
	}
	return nil
}

// Entries reads the file.
func (l *FileLedger) Entries(context.Context) ([]Entry, error) {
	return ReadLedgerFile(l.path)
}

// Close closes the file.
func (l *FileLedger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// NoteKind is the kind of the notes that hold a ledger in a job's store
// (NoteLedger).
const NoteKind = "batch"

// NoteLedger is a Ledger in the notes of a job of a store without job
// directories (store.NoteKeeper: PostgreSQL), one note per entry.
type NoteLedger struct {
	notes store.NoteKeeper
}

// NewNoteLedger returns the ledger kept in notes.
func NewNoteLedger(notes store.NoteKeeper) *NoteLedger { return &NoteLedger{notes: notes} }

// Append stores e as a note, durable when it returns.
func (l *NoteLedger) Append(ctx context.Context, e Entry) error {
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("batch: ledger: %w", err)
	}
	if err := l.notes.AppendNote(ctx, NoteKind, b); err != nil {
		return fmt.Errorf("batch: ledger: %w", err)
	}
	return nil
}

// Entries reads the notes back, oldest first.
func (l *NoteLedger) Entries(ctx context.Context) ([]Entry, error) {
	notes, err := l.notes.Notes(ctx, NoteKind)
	if err != nil {
		return nil, fmt.Errorf("batch: ledger: %w", err)
	}
	out := make([]Entry, 0, len(notes))
	for i, n := range notes {
		var e Entry
		if err := json.Unmarshal(n, &e); err != nil {
			return nil, fmt.Errorf("batch: ledger entry %d is damaged: %w", i+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// ReadLedgerFile reads a ledger file; a missing file has no entries. A
// torn last line is ignored; a damaged line before it is an error.
func ReadLedgerFile(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("batch: ledger: %w", err)
	}
	var out []Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<30)
	line := 0
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			if !bytes.HasSuffix(data, []byte("\n")) && bytes.HasSuffix(data, sc.Bytes()) {
				break // torn by a crash mid-append
			}
			return nil, fmt.Errorf("batch: ledger %s line %d is damaged: %w", path, line, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("batch: ledger: %w", err)
	}
	return out, nil
}

// WaveReport is one wave as the ledger tells it, for `tenax status`.
type WaveReport struct {
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
	// Counts sums the collected batches' final counts.
	Counts Counts
	// Online counts the items finished online (the online tail).
	Online int
	// Closed says the wave is over; CostUSD and FullCostUSD are then what
	// its answers cost and would have cost online.
	Closed               bool
	CostUSD, FullCostUSD float64
}

// Saved is what the wave saved against online calls.
func (w WaveReport) Saved() float64 { return w.FullCostUSD - w.CostUSD }

// Report reads a ledger's entries into one report per wave, oldest first.
func Report(entries []Entry) []WaveReport {
	var out []WaveReport
	at := map[int]int{}
	get := func(n int) *WaveReport {
		i, ok := at[n]
		if !ok {
			i = len(out)
			at[n] = i
			out = append(out, WaveReport{Wave: n})
		}
		return &out[i]
	}
	for _, e := range entries {
		w := get(e.Wave)
		switch e.Kind {
		case KindWave:
			w.Fresh, w.Items = e.Fresh, len(e.Items)
		case KindSubmitted:
			w.Batches = append(w.Batches, e.Batch)
			w.Requests += len(e.CustomIDs)
		case KindCollected:
			w.Collected++
			if c := e.Counts; c != nil {
				w.Counts.Total += c.Total
				w.Counts.Succeeded += c.Succeeded
				w.Counts.Errored += c.Errored
				w.Counts.Expired += c.Expired
				w.Counts.Canceled += c.Canceled
			}
		case KindClosed:
			w.Closed, w.Online = true, e.Online
			w.CostUSD += e.CostUSD
			w.FullCostUSD += e.FullCostUSD
		}
	}
	return out
}
