// Package redact keeps a spec's secrets out of what tenax writes:
// docs/spec.md ("Secrets and redaction") promises they never appear in
// results or logs. Checkpoint replaces them in every record before it
// is stored; Handler in every log message and string attribute, errors
// included. Both take the spec's Redact function, which knows the
// secrets' values.
package redact

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"

	"github.com/tenaxhq/tenax/store"
)

// Writer is what records are written to: engine.Checkpoint's two
// methods, declared here, where Checkpoint consumes them.
type Writer interface {
	// Append writes records.
	Append(ctx context.Context, recs ...store.Record) error
	// Flush makes the records appended so far durable.
	Flush(ctx context.Context) error
}

// Checkpoint replaces the spec's secrets in every record appended through
// it before its Writer stores them. It wraps only what records are written
// through (a store.Job, a worker's River checkpoint, batch mode's waves and
// online tail): the job's notes, manifest and reads stay with the caller.
type Checkpoint struct {
	Writer
	// Redact returns its text with every secret replaced.
	Redact func(string) string
}

// Append redacts the records, then appends them to the Writer.
func (c *Checkpoint) Append(ctx context.Context, recs ...store.Record) error {
	c.scrub(recs)
	return c.Writer.Append(ctx, recs...)
}

// scrub redacts recs in place.
func (c *Checkpoint) scrub(recs []store.Record) {
	for i := range recs {
		r := &recs[i]
		r.Error = c.Redact(r.Error)
		r.Stderr = c.Redact(r.Stderr)
		r.Tries = c.redactTries(r.Tries)
		r.Output = c.redactJSON(r.Output)
		r.Input = c.redactJSON(r.Input)
		r.TrackedErrors = c.redactJSON(r.TrackedErrors)
	}
}

// redactTries returns tries with their errors redacted: a copy when any
// changed, as the slice may be shared with whoever built the record.
func (c *Checkpoint) redactTries(tries []store.Try) []store.Try {
	var out []store.Try
	for i, try := range tries {
		e := c.Redact(try.Error)
		if e == try.Error {
			continue
		}
		if out == nil {
			out = slices.Clone(tries)
		}
		out[i].Error = e
	}
	if out == nil {
		return tries
	}
	return out
}

// redactJSON redacts a JSON value's text; a secret inside a JSON string is
// written there as is unless it holds characters JSON escapes, which keys
// and tokens do not.
func (c *Checkpoint) redactJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	s := string(raw)
	if r := c.Redact(s); r != s {
		return json.RawMessage(r)
	}
	return raw
}

// Handler scrubs secrets from log messages and string attributes, errors
// included, before its Handler sees them.
type Handler struct {
	slog.Handler
	// Redact returns its text with every secret replaced.
	Redact func(string) string
}

// Handle redacts the record, then hands it on.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	nr := slog.NewRecord(r.Time, r.Level, h.Redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		nr.AddAttrs(h.redactAttr(a))
		return true
	})
	return h.Handler.Handle(ctx, nr)
}

func (h *Handler) redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.Redact(v.String()))
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.Redact(err.Error()))
		}
		return slog.String(a.Key, h.Redact(v.String()))
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

// WithAttrs redacts the attributes, then hands them on.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.redactAttr(a)
	}
	return &Handler{Handler: h.Handler.WithAttrs(red), Redact: h.Redact}
}

// WithGroup returns a Handler that redacts within the group.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{Handler: h.Handler.WithGroup(name), Redact: h.Redact}
}
