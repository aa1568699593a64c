package mock

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Gemini API's batch mode, as the mock serves it (with inline requests
// and responses; a file of requests is refused):
//
//	POST /v1beta/models/{model}:batchGenerateContent   create: {"batch": {"displayName",
//	                                                    "inputConfig": {"requests": {"requests":
//	                                                    [{"request", "metadata"}]}}}}
//	GET  /v1beta/batches/{id}                           the batch as an Operation, its
//	                                                    responses in metadata.output once ended
//	GET  /v1beta/batches                                list, newest first (pageSize, pageToken)
//	POST /v1beta/batches/{id}:cancel                    cancel
//
// A batch is the Operation {"name": "batches/{id}", "metadata": {"@type":
// "…GenerateContentBatch", "model", "displayName", "state": "BATCH_STATE_…",
// "batchStats", "createTime", "updateTime", "endTime", "output":
// {"inlinedResponses": {"inlinedResponses": [{"response" | "error",
// "metadata"}]}}}, "done", "response"}, as the genai SDKs read it. Its
// requests draw their faults and answers as the openAI and Anthropic
// batches' do, and are answered as generateContent would answer them; a
// request that fails carries a google.rpc.Status (its gRPC code) in place
// of a response.

// geminiBatchPath is the Gemini API's batches collection.
const geminiBatchPath = "/v1beta/batches"

// Gemini's batch limits.
const (
	// GeminiMaxInlineBytes is the most bytes of inline requests in one
	// create call: 20 MB.
	GeminiMaxInlineBytes = 20 << 20
	// GeminiBatchWindow is how long a Gemini batch may be pending or
	// running before it expires: 48 hours.
	GeminiBatchWindow = 48 * time.Hour
)

// geminiBatchOp is the op of …/models/{model}:batchGenerateContent.
const geminiBatchOp = "batchGenerateContent"

// createGeminiBatch is POST /v1beta/models/{model}:batchGenerateContent.
func (s *Server) createGeminiBatch(x *exchange, model string) outcome {
	if x.key = x.d.apiKey(x.r); x.key == "" {
		x.fail(x.d.errs[errMissingKey](x))
		return answered
	}
	var req struct {
		Batch *struct {
			DisplayName string `json:"displayName"`
			InputConfig struct {
				FileName string `json:"fileName"`
				Requests *struct {
					Requests []struct {
						Request  json.RawMessage `json:"request"`
						Metadata map[string]any  `json:"metadata"`
					} `json:"requests"`
				} `json:"requests"`
			} `json:"inputConfig"`
		} `json:"batch"`
	}
	if x.r.ContentLength > GeminiMaxInlineBytes+1<<20 {
		x.fail(x.d.errs[errTooLarge](x))
		return answered
	}
	if err := json.NewDecoder(x.r.Body).Decode(&req); err != nil {
		x.fail(x.d.errs[errBadJSON](x))
		return answered
	}
	x.model = model
	b := req.Batch
	switch {
	case b == nil:
		x.fail(*googleInvalid("* BatchGenerateContentRequest.batch: batch is required"))
		return answered
	case b.DisplayName == "":
		x.fail(*googleInvalid("* GenerateContentBatch.display_name: display_name is required"))
		return answered
	case b.InputConfig.FileName != "":
		x.fail(*googleInvalid("The mock serves inline requests only (inputConfig.requests), not a file."))
		return answered
	case b.InputConfig.Requests == nil || len(b.InputConfig.Requests.Requests) == 0:
		x.fail(*googleInvalid("* GenerateContentBatch.input_config: requests are required"))
		return answered
	}
	if !knownModel(model) {
		x.fail(x.d.errs[errUnknownModel](x))
		return answered
	}
	in := b.InputConfig.Requests.Requests
	limit := GeminiMaxInlineBytes / 16 // the mock's count: far past what 20 MB holds
	if s.cfg.Batch.MaxRequests > 0 {
		limit = s.cfg.Batch.MaxRequests
	}
	if len(in) > limit {
		x.fail(*googleInvalid(fmt.Sprintf("A batch may hold at most %d requests, got %d.", limit, len(in))))
		return answered
	}
	sb := &simBatch{d: bGemini, created: time.Now(), duration: s.cfg.Batch.ProcessingTime, window: s.geminiWindow(),
		endpoint: "models/" + model, metadata: map[string]string{"displayName": b.DisplayName}}
	sb.reqs = make([]simRequest, len(in))
	for i, r := range in {
		key, _ := r.Metadata["key"].(string)
		sb.reqs[i] = s.answerGeminiBatched(model, key, r.Request)
	}
	s.keepBatch(sb)
	x.write(http.StatusOK, mustJSON(s.geminiBatchObject(sb, time.Now(), false)))
	return answered
}

// geminiWindow is a Gemini batch's window: BatchConfig.Window when set.
func (s *Server) geminiWindow() time.Duration {
	if s.cfg.Batch.Window > 0 {
		return s.cfg.Batch.Window
	}
	return GeminiBatchWindow
}

// answerGeminiBatched answers one request of a Gemini batch as
// generateContent would, with a fault drawn as a chat call's: an invalid
// answer, or a google.rpc.Status for any fault that would have failed the
// call (PERMISSION_DENIED for auth, INTERNAL for the others).
func (s *Server) answerGeminiBatched(model, key string, body json.RawMessage) simRequest {
	seq := s.next()
	f, _ := s.draw()
	out := simRequest{customID: key, seq: seq}
	fail := func(e apiError) simRequest {
		if e.counter != 0 {
			s.count(e.counter)
		}
		out.status, out.errType, out.errMsg = e.status, e.typ, e.message
		return out
	}
	x := &exchange{s: s, d: &gemini, seq: seq, fault: f, body: body, model: model, requestID: requestID(seq)}
	if err := decodeGenerate(x); err != nil {
		return fail(*googleInvalid("Invalid JSON payload received in request."))
	}
	if e := validateGenerate(x); e != nil {
		return fail(*e)
	}
	x.msgs = conversation(x.req)
	s.record(Recorded{Path: geminiPath + model + ":" + generateOperation, Model: model, Messages: x.msgs})
	x.prompt = promptOf(x.msgs)
	x.promptTokens = tokens(x.msgs...)
	if x.req.MaxTokens != nil {
		x.maxTokens = *x.req.MaxTokens
	}
	switch f {
	case faultNone:
		s.count(cSucceeded)
	case faultInvalidOutput:
		s.count(cInvalidOutputs)
	case faultAuth:
		return fail(googleError(403, "PERMISSION_DENIED", "Permission denied on resource project mock-project (or it may not exist).", cAuthErrors))
	default:
		// A request of a batch cannot time out or reset; every fault that
		// would have failed the call fails it with a server error.
		return fail(googleError(500, "INTERNAL", "An internal error has occurred.", cServerErrors))
	}
	out.status, out.body = http.StatusOK, geminiAnswer(x, s.compose(x))
	return out
}

// rpcCodes are the canonical gRPC codes of Google's status names, which a
// batch's failed request carries in its google.rpc.Status.
var rpcCodes = map[string]int{"CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4,
	"NOT_FOUND": 5, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8, "FAILED_PRECONDITION": 9,
	"INTERNAL": 13, "UNAVAILABLE": 14, "UNAUTHENTICATED": 16}

// geminiState is the BatchState of view v.
func geminiState(v batchView, b *simBatch) string {
	switch {
	case v.ended && v.fate == "canceled":
		return "BATCH_STATE_CANCELLED"
	case v.ended && v.fate == "expired":
		return "BATCH_STATE_EXPIRED"
	case v.ended:
		return "BATCH_STATE_SUCCEEDED"
	case v.processed == 0 && b.duration > 0:
		return "BATCH_STATE_PENDING"
	}
	return "BATCH_STATE_RUNNING"
}

// geminiBatchObject is b at now as the Operation the Gemini API returns;
// with output false its responses are left out (a list's entries).
func (s *Server) geminiBatchObject(b *simBatch, now time.Time, output bool) map[string]any {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	v := b.view(now)
	ok, errored := b.counts(v.processed)
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	name := "batches/" + b.id
	stats := map[string]string{"requestCount": strconv.Itoa(len(b.reqs)),
		"successfulRequestCount": strconv.Itoa(ok), "failedRequestCount": strconv.Itoa(errored),
		"pendingRequestCount": strconv.Itoa(len(b.reqs) - v.processed)}
	if v.ended {
		stats["pendingRequestCount"] = "0"
	}
	md := map[string]any{
		"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
		"name":  name, "model": b.endpoint, "displayName": b.metadata["displayName"],
		"state": geminiState(v, b), "batchStats": stats,
		"createTime": ts(b.created), "updateTime": ts(now),
	}
	op := map[string]any{"name": name, "metadata": md}
	if !v.ended {
		return op
	}
	md["endTime"], md["updateTime"] = ts(v.endedAt), ts(v.endedAt)
	op["done"] = true
	if output {
		s.batch.stats.ResultReads++
		out := map[string]any{"inlinedResponses": map[string]any{"inlinedResponses": geminiInlined(b, v.processed)}}
		md["output"] = out
		op["response"] = map[string]any{"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput",
			"inlinedResponses": out["inlinedResponses"]}
	}
	return op
}

// geminiInlined are the responses of b's first processed requests, in
// input order, each with its request's metadata.
func geminiInlined(b *simBatch, processed int) []any {
	list := make([]any, 0, processed)
	for _, r := range b.reqs[:processed] {
		e := map[string]any{}
		if r.customID != "" {
			e["metadata"] = map[string]string{"key": r.customID}
		}
		if r.status == http.StatusOK {
			e["response"] = r.body
		} else {
			e["error"] = map[string]any{"code": rpcCodes[r.errType], "message": r.errMsg}
		}
		list = append(list, e)
	}
	return list
}

// geminiBatchRoute serves /v1beta/batches and what is under it.
func (s *Server) geminiBatchRoute(x *exchange) outcome {
	if x.key = x.d.apiKey(x.r); x.key == "" {
		x.fail(x.d.errs[errMissingKey](x))
		return answered
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(x.r.URL.Path, geminiBatchPath), "/")
	id, op, _ := strings.Cut(rest, ":")
	switch {
	case x.r.Method == http.MethodGet && rest == "":
		s.listGeminiBatches(x)
	case x.r.Method == http.MethodGet && op == "" && !strings.Contains(id, "/"):
		if b := s.lookup(id, bGemini); b != nil {
			x.write(http.StatusOK, mustJSON(s.geminiBatchObject(b, time.Now(), true)))
			return answered
		}
		x.fail(googleError(404, "NOT_FOUND", "Requested entity was not found.", cBadRequests))
	case x.r.Method == http.MethodPost && op == "cancel":
		b := s.lookup(id, bGemini)
		if b == nil {
			x.fail(googleError(404, "NOT_FOUND", "Requested entity was not found.", cBadRequests))
			return answered
		}
		now := time.Now()
		s.batch.mu.Lock()
		s.batch.stats.Cancels++
		if v := b.view(now); !v.ended && b.canceledAt.IsZero() {
			b.canceledAt = now
		}
		s.batch.mu.Unlock()
		x.write(http.StatusOK, []byte("{}"))
	default:
		x.fail(x.d.errs[errUnknownRoute](x))
	}
	return answered
}

// listGeminiBatches is GET /v1beta/batches: pageSize (default 50, at most
// 1000) batches newest first, after the pageToken (the last name of the
// page before).
func (s *Server) listGeminiBatches(x *exchange) {
	q := x.r.URL.Query()
	size := 50
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			x.fail(*googleInvalid("page_size must be positive."))
			return
		}
		size = min(n, 1000)
	}
	token := q.Get("pageToken")
	now := time.Now()
	s.batch.mu.Lock()
	var list []*simBatch
	past := token == ""
	for i := len(s.batch.order) - 1; i >= 0; i-- {
		b := s.batch.batches[s.batch.order[i]]
		if b.d != bGemini {
			continue
		}
		if !past {
			past = b.id == token
			continue
		}
		list = append(list, b)
	}
	s.batch.mu.Unlock()
	more := len(list) > size
	list = list[:min(len(list), size)]
	ops := make([]any, 0, len(list))
	for _, b := range list {
		ops = append(ops, s.geminiBatchObject(b, now, false))
	}
	body := map[string]any{"operations": ops}
	if more {
		body["nextPageToken"] = list[len(list)-1].id
	}
	x.write(http.StatusOK, mustJSON(body))
}
