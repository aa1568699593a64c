package job

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/tenaxhq/tenax/store"
)

// redactingJob replaces the spec's secrets in every record before it is
// stored: docs/spec.md ("Secrets and redaction") promises they never appear in results.
type redactingJob struct {
	store.Job
	redact func(string) string
}

// Unwrap returns the job the records are written to, for what it offers
// beside store.Job (store.Notes).
func (j *redactingJob) Unwrap() store.Job { return j.Job }

func (j *redactingJob) Append(ctx context.Context, recs ...store.Record) error {
	j.redactRecords(recs)
	return j.Job.Append(ctx, recs...)
}

// redactRecords redacts recs in place.
func (j *redactingJob) redactRecords(recs []store.Record) {
	for i := range recs {
		r := &recs[i]
		r.Error = j.redact(r.Error)
		r.Output = j.redactJSON(r.Output)
		r.Input = j.redactJSON(r.Input)
		r.TrackedErrors = j.redactJSON(r.TrackedErrors)
	}
}

// redactJSON redacts a JSON value's text; a secret inside a JSON string is
// written there as is unless it holds characters JSON escapes, which keys
// and tokens do not.
func (j *redactingJob) redactJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	s := string(raw)
	if r := j.redact(s); r != s {
		return json.RawMessage(r)
	}
	return raw
}

// redactingHandler scrubs secrets from log messages and string attributes,
// errors included.
type redactingHandler struct {
	slog.Handler
	redact func(string) string
}

func (h *redactingHandler) Handle(ctx context.Context, r slog.Record) error {
	nr := slog.NewRecord(r.Time, r.Level, h.redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		nr.AddAttrs(h.redactAttr(a))
		return true
	})
	return h.Handler.Handle(ctx, nr)
}

func (h *redactingHandler) redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.redact(v.String()))
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.redact(err.Error()))
		}
		return slog.String(a.Key, h.redact(v.String()))
	case slog.KindGroup:
		attrs := v.Group()
		out := make([]any, len(attrs))
		for i, ga := range attrs {
			out[i] = h.redactAttr(ga)
		}
		return slog.Group(a.Key, out...)
	}
	return a
}

func (h *redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.redactAttr(a)
	}
	return &redactingHandler{Handler: h.Handler.WithAttrs(red), redact: h.redact}
}

func (h *redactingHandler) WithGroup(name string) slog.Handler {
	return &redactingHandler{Handler: h.Handler.WithGroup(name), redact: h.redact}
}
