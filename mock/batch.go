package mock

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The batch APIs the mock serves, beside the chat endpoints:
//
//	OpenAI     POST /v1/files (multipart, purpose=batch)   upload the requests
//	           POST /v1/batches                            create a batch of them
//	           GET  /v1/batches, /v1/batches/{id}          list, retrieve
//	           POST /v1/batches/{id}/cancel                cancel
//	           GET  /v1/files/{id}/content                 input, output and error files
//	Anthropic  POST /v1/messages/batches                   create
//	           GET  /v1/messages/batches, …/{id}           list, retrieve
//	           POST /v1/messages/batches/{id}/cancel       cancel
//	           GET  /v1/messages/batches/{id}/results      results as JSONL
//
// A batch's requests draw their faults in input order when it is created,
// exactly as chat requests do, and are then processed one after another over
// BatchConfig.ProcessingTime: request k of n is done at created +
// ProcessingTime·(k+1)/n. Nothing runs in the background; a batch's state is
// computed from the clock whenever it is read, so batches work inside a
// testing/synctest bubble and survive no restart of the server.

// Default batch limits, the providers' own.
const (
	// DefaultBatchWindow is a batch's completion window: 24 hours.
	DefaultBatchWindow = 24 * time.Hour
	// OpenAIMaxBatchRequests is the most requests of an OpenAI batch.
	OpenAIMaxBatchRequests = 50_000
	// AnthropicMaxBatchRequests is the most requests of an Anthropic batch.
	AnthropicMaxBatchRequests = 100_000
)

// BatchConfig sets how the simulated batch APIs behave. The zero value ends
// every batch at once, with the providers' limits and a 24-hour window.
type BatchConfig struct {
	// ProcessingTime is how long a batch takes to process all its
	// requests, evenly spread.
	ProcessingTime time.Duration
	// Window is the completion window; 0 means DefaultBatchWindow. A batch
	// still processing when it closes ends expired: its unprocessed
	// requests expire.
	Window time.Duration
	// ExpireFirst makes the first ExpireFirst batches created take twice
	// their window, so that about half of their requests expire.
	ExpireFirst int
	// MaxRequests caps the requests of one batch; 0 means the provider's
	// limit (OpenAIMaxBatchRequests, AnthropicMaxBatchRequests).
	MaxRequests int
}

func (c BatchConfig) window() time.Duration {
	if c.Window <= 0 {
		return DefaultBatchWindow
	}
	return c.Window
}

// BatchStats counts what the batch APIs did.
type BatchStats struct {
	// Uploads counts files uploaded.
	Uploads int64
	// Submissions counts batches created, of every provider.
	Submissions int64
	// Requests counts the requests of those batches.
	Requests int64
	// Cancels counts cancel calls.
	Cancels int64
	// ResultReads counts the times an ended batch's results were sent:
	// an output or error file's content, Anthropic's results, a Gemini
	// batch's Operation with its inlined responses.
	ResultReads int64
}

// batchStore holds the batch APIs' files and batches.
type batchStore struct {
	mu      sync.Mutex
	files   map[string]*simFile
	batches map[string]*simBatch
	order   []string // batch ids, oldest first
	seq     int
	stats   BatchStats
}

type simFile struct {
	id, purpose, name string
	created           time.Time
	data              []byte
	// batch and kind ("output" or "error") name a result file, generated
	// from its batch when read.
	batch *simBatch
	kind  string
}

// simBatch is one batch of either provider.
type simBatch struct {
	id          string
	d           bdialect
	num         int // 1 for the first batch created
	created     time.Time
	duration    time.Duration
	window      time.Duration
	canceledAt  time.Time
	endpoint    string
	inputFileID string
	metadata    map[string]string
	reqs        []simRequest
}

// simRequest is one request of a batch with its drawn outcome.
type simRequest struct {
	customID string
	seq      int64
	status   int             // 200, or the error's status
	body     json.RawMessage // the answer, or the error body (OpenAI's shape)
	errType  string          // Anthropic's error type when status is not 200
	errMsg   string
}

// BatchStats returns the batch APIs' counts so far.
func (s *Server) BatchStats() BatchStats {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	return s.batch.stats
}

// serveBatch serves the batch APIs' paths and reports whether r was one.
func (s *Server) serveBatch(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	var d bdialect
	switch {
	case strings.HasPrefix(p, "/v1/messages/batches"):
		d = bAnthropic
	case strings.HasPrefix(p, "/v1/batches"), strings.HasPrefix(p, "/v1/files"):
		d = bOpenAI
	default:
		return false
	}
	s.batch.mu.Lock()
	s.batch.seq++
	seq := int64(s.batch.seq)
	s.batch.mu.Unlock()
	rs := &responder{w: w, d: d, seq: seq}
	rs.setIDs()
	if batchKey(r) == "" {
		s.count(cAuthErrors)
		rs.fail(http.StatusUnauthorized, map[bdialect]string{bOpenAI: "invalid_request_error", bAnthropic: "authentication_error"}[d], "", "",
			"You didn't provide an API key.")
		return true
	}
	parts := strings.Split(strings.TrimPrefix(p, "/v1/"), "/")
	route := r.Method + " " + strings.Join(parts, "/")
	switch {
	case route == "POST files":
		s.uploadFile(rs, r)
	case r.Method == http.MethodGet && len(parts) == 3 && parts[0] == "files" && parts[2] == "content":
		s.fileContent(rs, parts[1])
	case route == "POST batches":
		s.createOpenAIBatch(rs, r)
	case route == "POST messages/batches":
		s.createAnthropicBatch(rs, r)
	case r.Method == http.MethodGet && (route == "GET batches" || route == "GET messages/batches"):
		s.listBatches(rs, r, d)
	case r.Method == http.MethodGet && (d == bOpenAI && len(parts) == 2 || d == bAnthropic && len(parts) == 3):
		s.getBatch(rs, parts[len(parts)-1], d)
	case r.Method == http.MethodPost && parts[len(parts)-1] == "cancel" && (d == bOpenAI && len(parts) == 3 || d == bAnthropic && len(parts) == 4):
		s.cancelBatch(rs, parts[len(parts)-2], d)
	case r.Method == http.MethodGet && d == bAnthropic && len(parts) == 4 && parts[3] == "results":
		s.anthropicResults(rs, parts[2])
	default:
		rs.fail(http.StatusNotFound, map[bdialect]string{bOpenAI: "invalid_request_error", bAnthropic: "not_found_error"}[d], "", "",
			fmt.Sprintf("Unknown request URL: %s %s.", r.Method, r.URL.Path))
	}
	return true
}

// uploadFile is OpenAI's POST /v1/files: a multipart form with purpose and
// file.
func (s *Server) uploadFile(rs *responder, r *http.Request) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") {
		rs.fail(http.StatusBadRequest, "invalid_request_error", "", "", "Expected a multipart/form-data body with 'file' and 'purpose'.")
		return
	}
	var purpose, name string
	var data []byte
	mr := multipart.NewReader(r.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			rs.fail(http.StatusBadRequest, "invalid_request_error", "", "", "Could not parse multipart form: "+err.Error())
			return
		}
		b, err := io.ReadAll(part)
		if err != nil {
			return // the client is gone
		}
		switch part.FormName() {
		case "purpose":
			purpose = string(b)
		case "file":
			name, data = part.FileName(), b
		}
	}
	if purpose != "batch" {
		rs.fail(http.StatusBadRequest, "invalid_request_error", "", "purpose", fmt.Sprintf("The mock accepts files of purpose 'batch' only, got %q.", purpose))
		return
	}
	if data == nil {
		rs.fail(http.StatusBadRequest, "invalid_request_error", "", "file", "Missing file.")
		return
	}
	b := &s.batch
	b.mu.Lock()
	if b.files == nil {
		b.files = map[string]*simFile{}
	}
	b.stats.Uploads++
	f := &simFile{id: fmt.Sprintf("file-mock%06d", len(b.files)+1), purpose: purpose, name: name, created: time.Now(), data: data}
	b.files[f.id] = f
	b.mu.Unlock()
	rs.writeJSON(http.StatusOK, fileObject(f, len(data)))
}

func fileObject(f *simFile, size int) map[string]any {
	return map[string]any{
		"id": f.id, "object": "file", "bytes": size, "created_at": f.created.Unix(),
		"filename": f.name, "purpose": f.purpose, "status": "processed",
	}
}

// createOpenAIBatch is POST /v1/batches: it reads the uploaded file's
// lines and draws each request's outcome.
func (s *Server) createOpenAIBatch(rs *responder, r *http.Request) {
	var req struct {
		InputFileID      string            `json:"input_file_id"`
		Endpoint         string            `json:"endpoint"`
		CompletionWindow string            `json:"completion_window"`
		Metadata         map[string]string `json:"metadata"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		rs.fail(http.StatusBadRequest, "invalid_request_error", "", "", "We could not parse the JSON body of your request.")
		return
	}
	if req.Endpoint != "/v1/chat/completions" {
		rs.fail(http.StatusBadRequest, "invalid_request_error", "", "endpoint", fmt.Sprintf("The mock batches /v1/chat/completions only, got %q.", req.Endpoint))
		return
	}
	if req.CompletionWindow != "24h" {
		rs.fail(http.StatusBadRequest, "invalid_request_error", "", "completion_window", fmt.Sprintf("Invalid completion_window %q: only '24h' is supported.", req.CompletionWindow))
		return
	}
	s.batch.mu.Lock()
	f := s.batch.files[req.InputFileID]
	s.batch.mu.Unlock()
	if f == nil || f.batch != nil {
		rs.fail(http.StatusNotFound, "invalid_request_error", "", "input_file_id", fmt.Sprintf("No such File object: %s", req.InputFileID))
		return
	}
	type line struct {
		CustomID string          `json:"custom_id"`
		Method   string          `json:"method"`
		URL      string          `json:"url"`
		Body     json.RawMessage `json:"body"`
	}
	var lines []line
	sc := bufio.NewScanner(bytes.NewReader(f.data))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.CustomID == "" || l.URL != req.Endpoint || l.Method != http.MethodPost {
			rs.fail(http.StatusBadRequest, "invalid_request_error", "invalid_file", "input_file_id",
				fmt.Sprintf("Line %d of the input file is not a valid batch request (custom_id, method POST, url %s, body).", n, req.Endpoint))
			return
		}
		lines = append(lines, l)
	}
	ids := make([]string, len(lines))
	bodies := make([]json.RawMessage, len(lines))
	for i, l := range lines {
		ids[i], bodies[i] = l.CustomID, l.Body
	}
	if msg := s.checkRequests(ids, OpenAIMaxBatchRequests); msg != "" {
		rs.fail(http.StatusBadRequest, "invalid_request_error", "", "input_file_id", msg)
		return
	}
	b := s.newBatch(bOpenAI, ids, bodies)
	b.endpoint, b.inputFileID, b.metadata = req.Endpoint, req.InputFileID, req.Metadata
	s.batch.mu.Lock()
	f.batch = b // a file makes one batch
	s.batch.mu.Unlock()
	rs.writeJSON(http.StatusOK, s.openAIBatchObject(b, time.Now()))
}

// createAnthropicBatch is POST /v1/messages/batches.
func (s *Server) createAnthropicBatch(rs *responder, r *http.Request) {
	var req struct {
		Requests []struct {
			CustomID string          `json:"custom_id"`
			Params   json.RawMessage `json:"params"`
		} `json:"requests"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		rs.fail(http.StatusBadRequest, "invalid_request_error", "", "", "requests: could not parse the request body")
		return
	}
	ids := make([]string, len(req.Requests))
	bodies := make([]json.RawMessage, len(req.Requests))
	for i, q := range req.Requests {
		if !validCustomID(q.CustomID) {
			rs.fail(http.StatusBadRequest, "invalid_request_error", "", "",
				fmt.Sprintf("requests.%d.custom_id: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", i))
			return
		}
		ids[i], bodies[i] = q.CustomID, q.Params
	}
	if msg := s.checkRequests(ids, AnthropicMaxBatchRequests); msg != "" {
		rs.fail(http.StatusBadRequest, "invalid_request_error", "", "", msg)
		return
	}
	b := s.newBatch(bAnthropic, ids, bodies)
	rs.writeJSON(http.StatusOK, s.anthropicBatchObject(b, time.Now()))
}

// validCustomID is Anthropic's rule for custom ids.
func validCustomID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// checkRequests returns why a batch's requests are refused, "" when they
// are not: none, too many, or a custom id used twice.
func (s *Server) checkRequests(ids []string, limit int) string {
	if s.cfg.Batch.MaxRequests > 0 {
		limit = s.cfg.Batch.MaxRequests
	}
	if len(ids) == 0 {
		return "A batch needs at least one request."
	}
	if len(ids) > limit {
		return fmt.Sprintf("A batch may hold at most %d requests, got %d.", limit, len(ids))
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			return fmt.Sprintf("The custom_id %q appears more than once; custom ids must be unique within a batch.", id)
		}
		seen[id] = true
	}
	return ""
}

// newBatch answers every request now, drawing faults in order, and keeps
// the batch.
func (s *Server) newBatch(d bdialect, ids []string, bodies []json.RawMessage) *simBatch {
	b := &simBatch{d: d, created: time.Now(), duration: s.cfg.Batch.ProcessingTime, window: s.cfg.Batch.window()}
	b.reqs = make([]simRequest, len(ids))
	for i := range ids {
		b.reqs[i] = s.answerBatched(d, ids[i], bodies[i])
	}
	s.keepBatch(b)
	return b
}

// keepBatch numbers b, names it in its dialect and keeps it.
func (s *Server) keepBatch(b *simBatch) {
	st := &s.batch
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.batches == nil {
		st.batches = map[string]*simBatch{}
	}
	st.stats.Submissions++
	st.stats.Requests += int64(len(b.reqs))
	b.num = int(st.stats.Submissions)
	if b.num <= s.cfg.Batch.ExpireFirst {
		b.duration = 2 * b.window
	}
	switch b.d {
	case bOpenAI:
		b.id = fmt.Sprintf("batch_mock%06d", b.num)
	case bGemini:
		b.id = fmt.Sprintf("mock%06d", b.num) // its name is batches/{id}
	default:
		b.id = fmt.Sprintf("msgbatch_mock%06d", b.num)
	}
	st.batches[b.id] = b
	st.order = append(st.order, b.id)
}

// answerBatched answers one request of a batch as the chat endpoint would,
// with a fault drawn the same way: an invalid answer, or an error for any
// fault that would have failed the call.
func (s *Server) answerBatched(d bdialect, customID string, body json.RawMessage) simRequest {
	seq := s.next()
	f, _ := s.draw()
	out := simRequest{customID: customID, seq: seq}
	fail := func(status int, typ, code, msg string) simRequest {
		out.status, out.errType, out.errMsg = status, typ, msg
		e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
		if code != "" {
			e["code"] = code
		}
		out.body, _ = json.Marshal(map[string]any{"error": e})
		return out
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return fail(http.StatusBadRequest, "invalid_request_error", "", "We could not parse the JSON body of your request.")
	}
	msgs := conversation(req)
	path := "/v1/chat/completions"
	if d == bAnthropic {
		path = "/v1/messages"
	}
	model := ""
	if req.Model != nil {
		model = *req.Model
	}
	s.record(Recorded{Path: path, Model: model, Messages: msgs})
	maxTokens := req.MaxTokens
	if req.MaxCompletionTokens != nil {
		maxTokens = req.MaxCompletionTokens
	}
	if status, typ, code, msg := s.refuseBatched(d, model, maxTokens != nil, f); status != 0 {
		return fail(status, typ, code, msg)
	}
	// The answer is the one the chat endpoint composes for the same body —
	// tool calls for tools, JSON for a schema — in the dialect's own shape,
	// as the real batch APIs run the request through the same model.
	x := &exchange{s: s, d: &openAI, seq: seq, fault: f, req: req, model: model, msgs: msgs}
	if d == bAnthropic {
		x.d = &anthropic
	}
	if req.Messages == nil || len(*req.Messages) == 0 {
		return fail(http.StatusBadRequest, "invalid_request_error", "", "messages: at least one message is required")
	}
	x.prompt = promptOf(msgs)
	x.promptTokens = tokens(msgs...)
	if maxTokens != nil {
		x.maxTokens = *maxTokens
	}
	if f == faultInvalidOutput {
		s.count(cInvalidOutputs)
	} else {
		s.count(cSucceeded)
	}
	out.status, out.body = http.StatusOK, x.d.answer(x, s.compose(x))
	return out
}

// refuseBatched returns the error a batch request gets before any answer,
// as the real API gives it (a missing max_tokens, an unknown model) or as
// its drawn fault f makes it: status 0 when it is answered.
func (s *Server) refuseBatched(d bdialect, model string, hasMaxTokens bool, f fault) (status int, typ, code, msg string) {
	switch {
	case d == bAnthropic && !hasMaxTokens:
		return http.StatusBadRequest, "invalid_request_error", "", "max_tokens: Field required"
	case model != ModelEcho && model != ModelJSON:
		if d == bOpenAI {
			return http.StatusNotFound, "invalid_request_error", "model_not_found", fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model)
		}
		return http.StatusNotFound, "not_found_error", "", "model: " + model
	}
	switch f {
	case faultAuth:
		s.count(cAuthErrors)
		if d == bOpenAI {
			return http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided."
		}
		return http.StatusUnauthorized, "authentication_error", "", "invalid x-api-key"
	case faultNone, faultInvalidOutput:
		return 0, "", "", ""
	default:
		// A request of a batch cannot time out or reset; every fault that
		// would have failed the call fails it with a server error.
		s.count(cServerErrors)
		if d == bOpenAI {
			return http.StatusInternalServerError, "server_error", "", "The server had an error while processing your request. Sorry about that!"
		}
		return http.StatusInternalServerError, "api_error", "", "Internal server error"
	}
}

// batchView is a batch's state at one instant.
type batchView struct {
	ended     bool
	endedAt   time.Time
	status    string // OpenAI's status
	processed int    // requests done (succeeded or errored)
	fate      string // what happened to the rest: "" (none left), "expired" or "canceled"
}

// view computes b's state at now.
func (b *simBatch) view(now time.Time) batchView {
	n := len(b.reqs)
	doneBy := func(t time.Time) int {
		if b.duration <= 0 {
			return n
		}
		el := t.Sub(b.created)
		if el <= 0 {
			return 0
		}
		return min(n, int(int64(n)*int64(el)/int64(b.duration)))
	}
	expiresAt := b.created.Add(b.window)
	end := b.created.Add(b.duration)
	switch {
	case !b.canceledAt.IsZero() && !b.canceledAt.After(now) && b.canceledAt.Before(end) && !b.canceledAt.After(expiresAt):
		return batchView{ended: true, endedAt: b.canceledAt, status: "cancelled", processed: doneBy(b.canceledAt), fate: "canceled"}
	case end.After(expiresAt) && !now.Before(expiresAt):
		return batchView{ended: true, endedAt: expiresAt, status: "expired", processed: doneBy(expiresAt), fate: "expired"}
	case !now.Before(end):
		return batchView{ended: true, endedAt: end, status: "completed", processed: n}
	}
	return batchView{status: "in_progress", processed: doneBy(now)}
}

// counts returns succeeded and errored among the first k requests.
func (b *simBatch) counts(k int) (ok, errored int) {
	for _, r := range b.reqs[:k] {
		if r.status == http.StatusOK {
			ok++
		} else {
			errored++
		}
	}
	return ok, errored
}

func (s *Server) lookup(id string, d bdialect) *simBatch {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	b := s.batch.batches[id]
	if b == nil || b.d != d {
		return nil
	}
	return b
}

func notFound(rs *responder, id string) {
	if rs.d == bOpenAI {
		rs.fail(http.StatusNotFound, "invalid_request_error", "", "", fmt.Sprintf("No batch found with id '%s'.", id))
		return
	}
	rs.fail(http.StatusNotFound, "not_found_error", "", "", "The requested resource could not be found: "+id)
}

func (s *Server) getBatch(rs *responder, id string, d bdialect) {
	b := s.lookup(id, d)
	if b == nil {
		notFound(rs, id)
		return
	}
	if d == bOpenAI {
		rs.writeJSON(http.StatusOK, s.openAIBatchObject(b, time.Now()))
		return
	}
	rs.writeJSON(http.StatusOK, s.anthropicBatchObject(b, time.Now()))
}

// listBatches lists the dialect's batches newest first, a page at a
// time as both providers do: limit (default 20; at most 100 for OpenAI,
// 1000 for Anthropic) batches after the cursor (OpenAI's after, Anthropic's
// after_id), has_more when more follow.
func (s *Server) listBatches(rs *responder, r *http.Request, d bdialect) {
	q := r.URL.Query()
	limit, most, cursor := 20, 100, q.Get("after")
	if d == bAnthropic {
		most, cursor = 1000, q.Get("after_id")
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > most {
			rs.fail(http.StatusBadRequest, "invalid_request_error", "", "limit", fmt.Sprintf("limit: must be an integer between 1 and %d", most))
			return
		}
		limit = n
	}
	now := time.Now()
	s.batch.mu.Lock()
	var list []*simBatch
	past := cursor == ""
	for i := len(s.batch.order) - 1; i >= 0; i-- { // newest first, as both providers list
		b := s.batch.batches[s.batch.order[i]]
		if b.d != d {
			continue
		}
		if !past {
			past = b.id == cursor
			continue
		}
		list = append(list, b)
	}
	s.batch.mu.Unlock()
	more := len(list) > limit
	list = list[:min(len(list), limit)]
	data := make([]map[string]any, 0, len(list))
	for _, b := range list {
		if d == bOpenAI {
			data = append(data, s.openAIBatchObject(b, now))
		} else {
			data = append(data, s.anthropicBatchObject(b, now))
		}
	}
	first, last := "", ""
	if len(list) > 0 {
		first, last = list[0].id, list[len(list)-1].id
	}
	if d == bOpenAI {
		rs.writeJSON(http.StatusOK, map[string]any{"object": "list", "data": data, "first_id": first, "last_id": last, "has_more": more})
		return
	}
	rs.writeJSON(http.StatusOK, map[string]any{"data": data, "first_id": first, "last_id": last, "has_more": more})
}

func (s *Server) cancelBatch(rs *responder, id string, d bdialect) {
	b := s.lookup(id, d)
	if b == nil {
		notFound(rs, id)
		return
	}
	now := time.Now()
	s.batch.mu.Lock()
	s.batch.stats.Cancels++
	if v := b.view(now); !v.ended && b.canceledAt.IsZero() {
		b.canceledAt = now
	}
	s.batch.mu.Unlock()
	s.getBatch(rs, id, d)
}

// openAIBatchObject is b as OpenAI's Batch object.
func (s *Server) openAIBatchObject(b *simBatch, now time.Time) map[string]any {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	v := b.view(now)
	ok, errored := b.counts(v.processed)
	if v.ended {
		errored += len(b.reqs) - v.processed // expired and canceled requests are failed
	}
	o := map[string]any{
		"id": b.id, "object": "batch", "endpoint": b.endpoint, "input_file_id": b.inputFileID,
		"completion_window": "24h", "status": v.status, "created_at": b.created.Unix(),
		"in_progress_at": b.created.Unix(), "expires_at": b.created.Add(b.window).Unix(),
		"output_file_id": nil, "error_file_id": nil, "errors": nil, "metadata": b.metadata,
		"request_counts": map[string]int{"total": len(b.reqs), "completed": ok, "failed": errored},
	}
	if !b.canceledAt.IsZero() {
		o["cancelling_at"] = b.canceledAt.Unix()
	}
	if v.ended {
		switch v.status {
		case "completed":
			o["completed_at"] = v.endedAt.Unix()
			o["finalizing_at"] = v.endedAt.Unix()
		case "expired":
			o["expired_at"] = v.endedAt.Unix()
		case "cancelled":
			o["cancelled_at"] = v.endedAt.Unix()
		}
		if ok > 0 {
			o["output_file_id"] = s.resultFileLocked(b, "output").id
		}
		if errored > 0 {
			o["error_file_id"] = s.resultFileLocked(b, "error").id
		}
	}
	return o
}

// resultFileLocked returns b's output or error file, making it on first
// use. The caller holds s.batch.mu.
func (s *Server) resultFileLocked(b *simBatch, kind string) *simFile {
	id := fmt.Sprintf("file-%s-%s", kind, strings.TrimPrefix(b.id, "batch_"))
	if f := s.batch.files[id]; f != nil {
		return f
	}
	if s.batch.files == nil {
		s.batch.files = map[string]*simFile{}
	}
	f := &simFile{id: id, purpose: "batch_output", name: b.id + "_" + kind + ".jsonl", created: time.Now(), batch: b, kind: kind}
	s.batch.files[id] = f
	return f
}

// fileContent is GET /v1/files/{id}/content: an uploaded file as it was,
// or a batch's output or error file as JSONL.
func (s *Server) fileContent(rs *responder, id string) {
	s.batch.mu.Lock()
	f := s.batch.files[id]
	s.batch.mu.Unlock()
	if f == nil {
		rs.fail(http.StatusNotFound, "invalid_request_error", "", "", fmt.Sprintf("No such File object: %s", id))
		return
	}
	if f.kind == "" {
		rs.writeRaw(http.StatusOK, "application/octet-stream", f.data)
		return
	}
	s.batch.mu.Lock()
	b := f.batch
	v := b.view(time.Now())
	s.batch.stats.ResultReads++
	s.batch.mu.Unlock()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i, r := range b.reqs {
		line := map[string]any{"id": fmt.Sprintf("batch_req_mock%012d", r.seq), "custom_id": r.customID}
		switch {
		case i >= v.processed:
			if f.kind != "error" {
				continue
			}
			code, msg := "batch_expired", "This request could not be executed before the completion window expired."
			if v.fate == "canceled" {
				code, msg = "batch_cancelled", "This request was not executed because the batch was cancelled."
			}
			line["response"], line["error"] = nil, map[string]string{"code": code, "message": msg}
		case (r.status == http.StatusOK) != (f.kind == "output"):
			continue
		default:
			line["response"] = map[string]any{"status_code": r.status, "request_id": fmt.Sprintf("req_mock%012d", r.seq), "body": r.body}
			line["error"] = nil
		}
		_ = enc.Encode(line)
	}
	rs.writeRaw(http.StatusOK, "application/octet-stream", buf.Bytes())
}

// anthropicBatchObject is b as Anthropic's MessageBatch object.
func (s *Server) anthropicBatchObject(b *simBatch, now time.Time) map[string]any {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	v := b.view(now)
	ok, errored := b.counts(v.processed)
	counts := map[string]int{"processing": 0, "succeeded": ok, "errored": errored, "canceled": 0, "expired": 0}
	status := "in_progress"
	switch {
	case v.ended:
		status = "ended"
		counts[v.fate] = len(b.reqs) - v.processed
	case !b.canceledAt.IsZero():
		status = "canceling"
		counts["processing"] = len(b.reqs) - v.processed
	default:
		counts["processing"] = len(b.reqs) - v.processed
	}
	delete(counts, "")
	ts := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	o := map[string]any{
		"id": b.id, "type": "message_batch", "processing_status": status, "request_counts": counts,
		"created_at": ts(b.created), "expires_at": ts(b.created.Add(b.window)),
		"ended_at": nil, "cancel_initiated_at": ts(b.canceledAt), "archived_at": nil, "results_url": nil,
	}
	if v.ended {
		o["ended_at"] = ts(v.endedAt)
		o["results_url"] = "/v1/messages/batches/" + b.id + "/results"
	}
	return o
}

// anthropicResults is GET /v1/messages/batches/{id}/results.
func (s *Server) anthropicResults(rs *responder, id string) {
	b := s.lookup(id, bAnthropic)
	if b == nil {
		notFound(rs, id)
		return
	}
	s.batch.mu.Lock()
	v := b.view(time.Now())
	if v.ended {
		s.batch.stats.ResultReads++
	}
	s.batch.mu.Unlock()
	if !v.ended {
		rs.fail(http.StatusBadRequest, "invalid_request_error", "", "", fmt.Sprintf("Results for message batch %s are not available: it is still in_progress.", id))
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i, r := range b.reqs {
		var result any
		switch {
		case i >= v.processed:
			result = map[string]string{"type": v.fate}
		case r.status == http.StatusOK:
			result = map[string]any{"type": "succeeded", "message": r.body}
		default:
			result = map[string]any{"type": "errored", "error": map[string]any{
				"type": "error", "error": map[string]string{"type": r.errType, "message": r.errMsg},
				"request_id": fmt.Sprintf("req_mock%012d", r.seq),
			}}
		}
		_ = enc.Encode(map[string]any{"custom_id": r.customID, "result": result})
	}
	rs.writeRaw(http.StatusOK, "application/x-jsonl", buf.Bytes())
}

// writeJSON sends v as JSON.
func (rs *responder) writeJSON(status int, v any) {
	b, _ := json.Marshal(v)
	rs.write(status, b)
}

// writeRaw sends body with its content type.
func (rs *responder) writeRaw(status int, contentType string, body []byte) {
	rs.header().Set("Content-Type", contentType)
	rs.w.WriteHeader(status)
	_, _ = rs.w.Write(body)
}

// batchRoute serves the batch APIs' routes (route.go).
func (s *Server) batchRoute(x *exchange) outcome {
	s.serveBatch(x.w, x.r)
	return answered
}

// bdialect is the provider whose batch API a request speaks.
type bdialect uint8

const (
	bOpenAI bdialect = iota + 1
	bAnthropic
	bGemini
)

// batchKey returns the key a batch API request authenticates with.
func batchKey(r *http.Request) string {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	k, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return strings.TrimSpace(k)
}

// responder writes one batch API response in its provider's shapes.
type responder struct {
	w         http.ResponseWriter
	d         bdialect
	seq       int64
	requestID string
}

func (rs *responder) header() http.Header { return rs.w.Header() }

// setIDs sets the request id header every response carries.
func (rs *responder) setIDs() {
	rs.requestID = fmt.Sprintf("req_mockb%011d", rs.seq)
	if rs.d == bOpenAI {
		rs.header().Set("x-request-id", rs.requestID)
	} else {
		rs.header().Set("request-id", rs.requestID)
	}
}

// fail writes an error in the dialect's shape. OpenAI's code and param
// are null when empty; Anthropic's body has no code or param.
func (rs *responder) fail(status int, typ, code, param, message string) {
	var body any
	if rs.d == bOpenAI {
		type openAIError struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		}
		e := openAIError{Message: message, Type: typ}
		if code != "" {
			e.Code = &code
		}
		if param != "" {
			e.Param = &param
		}
		body = struct {
			Error openAIError `json:"error"`
		}{e}
	} else {
		type anthropicError struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		body = struct {
			Type      string         `json:"type"`
			Error     anthropicError `json:"error"`
			RequestID string         `json:"request_id"`
		}{"error", anthropicError{typ, message}, rs.requestID}
	}
	b, _ := json.Marshal(body)
	rs.write(status, b)
}

// write sends status and body as JSON.
func (rs *responder) write(status int, body []byte) {
	rs.header().Set("Content-Type", "application/json")
	rs.header().Set("Content-Length", strconv.Itoa(len(body)))
	rs.w.WriteHeader(status)
	_, _ = rs.w.Write(body)
}
