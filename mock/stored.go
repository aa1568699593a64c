package mock

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// MaxStored bounds the stored chat completions the mock keeps: past it
// the oldest is dropped, as a real store's retention would have dropped
// it, so that a long run's memory stays bounded.
const MaxStored = 10000

// OpenAI's bounds of a request's metadata.
const (
	maxMetadataKeys     = 16
	maxMetadataKeyLen   = 64
	maxMetadataValueLen = 512
)

// storedCompletions keeps the chat completions asked for with store:
// true, oldest first, as OpenAI's stored chat completions: listed by
// GET /v1/chat/completions and filtered by metadata and model.
type storedCompletions struct {
	mu   sync.Mutex
	list []storedCompletion
}

// storedCompletion is one kept answer: the completion object as
// answered, with its metadata, as the list returns it.
type storedCompletion struct {
	id, model string
	metadata  map[string]string
	body      json.RawMessage
}

// keep stores x's answer body when the request asked for it: the
// answer the provider billed, kept also when the client left before it
// could read it.
func (s *Server) keep(x *exchange, body []byte) {
	if x.req.Store == nil || !*x.req.Store {
		return
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return
	}
	var id string
	_ = json.Unmarshal(obj["id"], &id)
	obj["metadata"] = mustJSON(x.req.Metadata)
	obj["request_id"] = mustJSON(x.requestID)
	c := storedCompletion{id: id, model: x.model, metadata: x.req.Metadata, body: mustJSON(obj)}
	st := &s.stored
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.list) >= MaxStored {
		st.list = slices.Delete(st.list, 0, len(st.list)-MaxStored+1)
	}
	st.list = append(st.list, c)
}

// checkMetadata refuses metadata past OpenAI's bounds, with its
// messages.
func checkMetadata(meta map[string]string) *apiError {
	const inv = "invalid_request_error"
	if len(meta) > maxMetadataKeys {
		return bad(inv, "object_above_max_properties", "metadata",
			fmt.Sprintf("Invalid 'metadata': too many properties. Expected an object with at most %d properties, but got an object with %d properties instead.", maxMetadataKeys, len(meta)))
	}
	for k, v := range meta {
		if n := utf8.RuneCountInString(k); n > maxMetadataKeyLen {
			return bad(inv, "string_above_max_length", "metadata",
				fmt.Sprintf("Invalid 'metadata': string too long. Expected a string with maximum length %d, but got a string with length %d instead.", maxMetadataKeyLen, n))
		}
		if n := utf8.RuneCountInString(v); n > maxMetadataValueLen {
			return bad(inv, "string_above_max_length", "metadata."+k,
				fmt.Sprintf("Invalid 'metadata.%s': string too long. Expected a string with maximum length %d, but got a string with length %d instead.", k, maxMetadataValueLen, n))
		}
	}
	return nil
}

// listStored answers GET /v1/chat/completions as OpenAI does: the stored
// completions whose metadata holds every metadata[k]=v of the query and
// whose model is model (when given), oldest first (order asc, the
// default) or newest first (desc), limit of them (default 20, 1 to 100)
// after the completion named by after, as {object: "list", data,
// first_id, last_id, has_more}.
func (s *Server) listStored(x *exchange) outcome {
	if x.d.apiKey(x.r) == "" {
		x.fail(x.d.errs[errMissingKey](x))
		return answered
	}
	q := x.r.URL.Query()
	limit, order := 20, q.Get("order")
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			x.fail(*bad("invalid_request_error", "integer_out_of_range", "limit",
				fmt.Sprintf("Invalid 'limit': integer out of range. Expected a value between 1 and 100, but got %s instead.", v)))
			return answered
		}
		limit = n
	}
	if order != "" && order != "asc" && order != "desc" {
		x.fail(*bad("invalid_request_error", "invalid_value", "order",
			fmt.Sprintf("Invalid value: '%s'. Supported values are: 'asc' and 'desc'.", order)))
		return answered
	}
	want := map[string]string{}
	for k, vs := range q {
		if name, ok := strings.CutPrefix(k, "metadata["); ok && strings.HasSuffix(name, "]") && len(vs) > 0 {
			want[strings.TrimSuffix(name, "]")] = vs[0]
		}
	}
	page, more := s.stored.page(want, q.Get("model"), q.Get("after"), order == "desc", limit)
	list := struct {
		Object  string            `json:"object"`
		Data    []json.RawMessage `json:"data"`
		FirstID *string           `json:"first_id"`
		LastID  *string           `json:"last_id"`
		HasMore bool              `json:"has_more"`
	}{Object: "list", Data: []json.RawMessage{}, HasMore: more}
	for _, c := range page {
		list.Data = append(list.Data, c.body)
	}
	if len(page) > 0 {
		list.FirstID, list.LastID = &page[0].id, &page[len(page)-1].id
	}
	x.write(http.StatusOK, mustJSON(list))
	return answered
}

// page returns up to limit stored completions that match, in order,
// after the one named after (none: from the start), and whether more
// match beyond them.
func (st *storedCompletions) page(want map[string]string, model, after string, desc bool, limit int) ([]storedCompletion, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []storedCompletion
	seen := after == ""
	for i := range st.list {
		c := st.list[i]
		if desc {
			c = st.list[len(st.list)-1-i]
		}
		if !seen {
			seen = c.id == after
			continue
		}
		if model != "" && c.model != model || !holds(c.metadata, want) {
			continue
		}
		if len(out) == limit {
			return out, true
		}
		out = append(out, c)
	}
	return out, false
}

// holds reports whether meta has every key of want with its value.
func holds(meta, want map[string]string) bool {
	for k, v := range want {
		if got, ok := meta[k]; !ok || got != v {
			return false
		}
	}
	return true
}
