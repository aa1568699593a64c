package redact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/redact"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
)

const secret = "sk-live-0123456789"

func hide(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }

// TestCheckpointStoresNoSecret: the secret is gone from every text field
// of a record (stderr and the routes tried included), its JSON fields
// included, and from nothing else; the caller's tries are left as they were.
func TestCheckpointStoresNoSecret(t *testing.T) {
	ctx := context.Background()
	inner, err := (&memory.Store{}).Create(ctx, store.Manifest{Items: 1})
	if err != nil {
		t.Fatal(err)
	}
	j := &redact.Checkpoint{Writer: inner, Redact: hide}
	rec := store.Record{Idx: 0, Error: "401 for key " + secret,
		Stderr: "connecting with " + secret, Tries: []store.Try{{Route: "a", Error: "403 for " + secret}},
		Input: json.RawMessage(`{"key":"` + secret + `"}`), Output: json.RawMessage(`{"n":1}`)}
	if err := j.Append(ctx, rec); err != nil {
		t.Fatal(err)
	}
	var got []store.Record
	if err := inner.Scan(ctx, func(r store.Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("stored %d records, want 1", len(got))
	}
	b, _ := json.Marshal(got[0])
	if strings.Contains(string(b), secret) || got[0].Error != "401 for key [redacted]" ||
		got[0].Stderr != "connecting with [redacted]" || got[0].Tries[0].Error != "403 for [redacted]" ||
		rec.Tries[0].Error != "403 for "+secret || string(got[0].Output) != `{"n":1}` {
		t.Errorf("stored %s", b)
	}
}

// TestHandlerLogsNoSecret: the message, a string, an error and a grouped
// attribute, before and after WithAttrs and WithGroup.
func TestHandlerLogsNoSecret(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(&redact.Handler{Handler: slog.NewTextHandler(&out, nil), Redact: hide})
	log = log.With("key", secret).WithGroup("call")
	log.Error("call with "+secret+" failed", "err", errors.New("bad key "+secret),
		slog.Group("req", "auth", "Bearer "+secret))
	if strings.Contains(out.String(), secret) || strings.Count(out.String(), "[redacted]") != 4 {
		t.Errorf("logged %s", out.String())
	}
}
