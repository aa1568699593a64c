package mock

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log writer safe to read while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// storedCall posts a chat completion asking to store it under meta.
func storedCall(ctx context.Context, t *testing.T, base, model string, meta map[string]string) (int, []byte, error) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"model": model, "store": true, "metadata": meta,
		"messages": []map[string]string{{"role": "user", "content": "hello"}}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return res.StatusCode, body, err
}

// storedList is the list shape of GET /v1/chat/completions.
type storedList struct {
	Object string `json:"object"`
	Data   []struct {
		ID       string            `json:"id"`
		Object   string            `json:"object"`
		Model    string            `json:"model"`
		Metadata map[string]string `json:"metadata"`
		Choices  []json.RawMessage `json:"choices"`
	} `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

func listStoredAt(t *testing.T, base string, q url.Values) storedList {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/chat/completions?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer k")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var l storedList
	if err := json.NewDecoder(res.Body).Decode(&l); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /v1/chat/completions?%s: status %d, %v", q.Encode(), res.StatusCode, err)
	}
	return l
}

// Completions created with store: true and metadata are listed as
// OpenAI lists them: filtered by every metadata[k]=v and by model, in
// the list shape, paged by limit and after, either order.
func TestStoredCompletionsAreListedByMetadataAndModel(t *testing.T) {
	ts := httptest.NewServer(New(Config{}))
	defer ts.Close()
	ctx := t.Context()
	for i := range 3 {
		meta := map[string]string{"job": "j1", "step": fmt.Sprint(i)}
		if status, body, err := storedCall(ctx, t, ts.URL, "mock-echo", meta); err != nil || status != 200 {
			t.Fatalf("create: %d %s %v", status, body, err)
		}
	}
	if status, _, _ := storedCall(ctx, t, ts.URL, "mock-json", map[string]string{"job": "j1", "step": "0"}); status != 200 {
		t.Fatal("create on mock-json failed")
	}

	one := listStoredAt(t, ts.URL, url.Values{"metadata[job]": {"j1"}, "metadata[step]": {"1"}, "model": {"mock-echo"}})
	if one.Object != "list" || len(one.Data) != 1 || one.Data[0].Metadata["step"] != "1" || one.Data[0].Object != "chat.completion" ||
		one.FirstID == nil || *one.FirstID != one.Data[0].ID || one.HasMore || len(one.Data[0].Choices) != 1 {
		t.Errorf("the list for step 1 on mock-echo is %+v, want the one completion with its metadata, first_id its id, has_more false", one)
	}
	all := listStoredAt(t, ts.URL, url.Values{"metadata[job]": {"j1"}})
	if len(all.Data) != 4 {
		t.Errorf("job j1 lists %d completions, want 4 (both models)", len(all.Data))
	}
	page := listStoredAt(t, ts.URL, url.Values{"metadata[job]": {"j1"}, "limit": {"2"}})
	if len(page.Data) != 2 || !page.HasMore || *page.LastID != page.Data[1].ID {
		t.Errorf("limit 2 gave %d, has_more %v: want 2 and more to come", len(page.Data), page.HasMore)
	}
	rest := listStoredAt(t, ts.URL, url.Values{"metadata[job]": {"j1"}, "limit": {"2"}, "after": {*page.LastID}})
	if len(rest.Data) != 2 || rest.HasMore || rest.Data[0].ID == page.Data[1].ID {
		t.Errorf("after %s gave %+v, want the other 2 and no more", *page.LastID, rest)
	}
	desc := listStoredAt(t, ts.URL, url.Values{"metadata[job]": {"j1"}, "order": {"desc"}})
	if desc.Data[0].ID != all.Data[3].ID {
		t.Errorf("order desc starts with %s, want the newest %s", desc.Data[0].ID, all.Data[3].ID)
	}
	none := listStoredAt(t, ts.URL, url.Values{"metadata[job]": {"j2"}})
	if len(none.Data) != 0 || none.FirstID != nil || none.LastID != nil {
		t.Errorf("job j2 lists %+v, want an empty list with null ids", none)
	}
}

// A request whose client leaves while the model is still answering is
// answered all the same by a served mock, as a provider finishes (and
// bills) it: stored when it asked to be, logged as abandoned.
func TestAStoredCallWhoseClientLeftIsKeptAndLoggedAsAbandoned(t *testing.T) {
	var log syncBuffer
	s := New(Config{Latency: time.Second, LogRequests: &log, Record: true})
	ts := httptest.NewServer(s)
	defer ts.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		// The client leaves once the mock holds its request.
		for len(s.Requests()) == 0 && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	if _, _, err := storedCall(ctx, t, ts.URL, "mock-echo", map[string]string{"k": "gone"}); err == nil {
		t.Fatal("the client gave up before the answer, yet the call succeeded")
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(listStoredAt(t, ts.URL, url.Values{"metadata[k]": {"gone"}}).Data) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the answer of the call whose client left was never stored")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for !strings.Contains(log.String(), `"outcome":"abandoned"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said abandoned:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Metadata past OpenAI's bounds is refused with its 400; a list's limit
// out of range too.
func TestStoredMetadataAndListLimitsAreOpenAIs(t *testing.T) {
	ts := httptest.NewServer(New(Config{}))
	defer ts.Close()
	many := map[string]string{}
	for i := range 17 {
		many[fmt.Sprint("k", i)] = "v"
	}
	cases := map[string]map[string]string{"17 keys": many, "a long value": {"k": strings.Repeat("x", 513)}, "a long key": {strings.Repeat("k", 65): "v"}}
	for name, meta := range cases {
		status, body, err := storedCall(t.Context(), t, ts.URL, "mock-echo", meta)
		if err != nil || status != 400 || !strings.Contains(string(body), "metadata") {
			t.Errorf("%s: %d %s %v, want a 400 naming metadata", name, status, body, err)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1/chat/completions?limit=101", nil)
	req.Header.Set("Authorization", "Bearer k")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 {
		t.Errorf("limit 101: status %d, want 400", res.StatusCode)
	}
}
