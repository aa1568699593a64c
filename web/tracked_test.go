package web

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
)

func TestItemPageShowsTrackedErrorsAsATable(t *testing.T) {
	st := &memory.Store{}
	ctx := context.Background()
	j, err := st.Create(ctx, store.Manifest{Name: "t", Created: time.Now(), Items: 2, State: store.StateFailed})
	if err != nil {
		t.Fatal(err)
	}
	err = j.Append(ctx,
		store.Record{Idx: 0, Input: []byte(`{}`), Class: classify.Invalid, Error: "bad", FinishedAt: time.Now(),
			TrackedErrors: []byte(`[{"fingerprint":"ec9c2817ba31ee8d","name":"validate","message":"missing property 'es' at <root>","normalized":"missing property \u003cquoted\u003e","attempts":3,"status":"active"}]`)},
		store.Record{Idx: 1, Input: []byte(`{}`), FinishedAt: time.Now(), TrackedErrors: []byte(`{"not": "a list"}`)})
	if err != nil {
		t.Fatal(err)
	}
	id := j.Manifest().ID
	j.Close()
	srv := httptest.NewServer(New(Config{Store: st}))
	defer srv.Close()

	_, body := get(t, srv.Client(), srv.URL+"/jobs/"+id+"/items/0", nil)
	for _, want := range []string{`<table class="tracked"`, `status-active`, `<code>ec9c2817ba31ee8d</code>`, "missing property &#39;es&#39; at &lt;root&gt;", `<td class="num">3</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the item page lacks %s", want)
		}
	}
	if strings.Contains(body, `\u003c`) {
		t.Error(`the item page shows JSON escapes (\u003c) instead of the text`)
	}
	// Tracked errors that do not decode are shown as they are.
	_, body = get(t, srv.Client(), srv.URL+"/jobs/"+id+"/items/1", nil)
	if !strings.Contains(body, "a list") || strings.Contains(body, `<table class="tracked"`) {
		t.Errorf("undecodable tracked errors should be shown as text, not a table")
	}
}
