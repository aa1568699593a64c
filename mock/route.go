package mock

import (
	"net/http"
	"strings"
)

// outcome tells ServeHTTP and the transport what the connection must do
// after a handler returns.
type outcome uint8

const (
	answered  outcome = iota
	resetConn         // drop the connection with a TCP reset, nothing sent
	cutConn           // drop the connection after a partial answer
)

// route is one endpoint: requests whose method and path match are served
// by serve, in the dialect that dialectOf picks. A path ending in "/"
// matches every path below it. To add an endpoint, add a route to
// routeTable.
type route struct {
	method, path string
	dialectOf    func(r *http.Request) *dialect
	serve        func(s *Server, x *exchange) outcome
}

// Dialect pickers for routes.
func isOpenAI(*http.Request) *dialect    { return &openAI }
func isAnthropic(*http.Request) *dialect { return &anthropic }
func isAzure(*http.Request) *dialect     { return &azureOpenAI }
func isBedrock(*http.Request) *dialect   { return &bedrock }
func isGemini(*http.Request) *dialect    { return &gemini }

// byHeaders picks Anthropic for a request that carries its version or
// key header, OpenAI otherwise: for paths both providers serve.
func byHeaders(r *http.Request) *dialect {
	if r.Header.Get("anthropic-version") != "" || r.Header.Get("x-api-key") != "" {
		return &anthropic
	}
	return &openAI
}

// routeTable lists the endpoints the mock serves.
func (s *Server) routeTable() []route {
	return []route{
		{http.MethodPost, "/v1/chat/completions", isOpenAI, (*Server).chat},
		{http.MethodPost, "/chat/completions", isOpenAI, (*Server).chat},
		{http.MethodGet, "/v1/chat/completions", isOpenAI, (*Server).listStored},
		{http.MethodGet, "/chat/completions", isOpenAI, (*Server).listStored},
		{http.MethodGet, "/openai/chat/completions", isAzure, (*Server).listStored},
		{http.MethodPost, "/v1/messages", isAnthropic, (*Server).chat},
		{http.MethodPost, "/messages", isAnthropic, (*Server).chat},
		{http.MethodPost, azureDeploymentPath, isAzure, (*Server).azureChat},
		{http.MethodPost, bedrockPath, isBedrock, (*Server).bedrockChat},
		{http.MethodPost, geminiPath, isGemini, (*Server).geminiChat},
		{http.MethodPost, vertexPath, byPublisher, (*Server).vertexChat},
		{http.MethodPost, vertexBeta1Path, isGemini, (*Server).geminiChat},
		{http.MethodPost, "/v1/messages/count_tokens", isAnthropic, (*Server).countTokens},
		{http.MethodGet, "/v1/models", byHeaders, (*Server).listModels},
		{http.MethodGet, "/models", byHeaders, (*Server).listModels},
		{http.MethodGet, "/v1/models/", byHeaders, (*Server).getModel},
		{http.MethodGet, "/models/", byHeaders, (*Server).getModel},
		// The batch APIs (batch.go).
		{http.MethodPost, "/v1/files", isOpenAI, (*Server).batchRoute},
		{http.MethodGet, "/v1/files/", isOpenAI, (*Server).batchRoute},
		{http.MethodPost, "/v1/batches", isOpenAI, (*Server).batchRoute},
		{http.MethodGet, "/v1/batches", isOpenAI, (*Server).batchRoute},
		{http.MethodGet, "/v1/batches/", isOpenAI, (*Server).batchRoute},
		{http.MethodPost, "/v1/batches/", isOpenAI, (*Server).batchRoute},
		{http.MethodPost, "/v1/messages/batches", isAnthropic, (*Server).batchRoute},
		{http.MethodGet, "/v1/messages/batches", isAnthropic, (*Server).batchRoute},
		{http.MethodGet, "/v1/messages/batches/", isAnthropic, (*Server).batchRoute},
		{http.MethodPost, "/v1/messages/batches/", isAnthropic, (*Server).batchRoute},
		// The Gemini API's batch mode (geminibatch.go); its create is under
		// geminiPath.
		{http.MethodGet, geminiBatchPath, isGemini, (*Server).geminiBatchRoute},
		{http.MethodGet, geminiBatchPath + "/", isGemini, (*Server).geminiBatchRoute},
		{http.MethodPost, geminiBatchPath + "/", isGemini, (*Server).geminiBatchRoute},
	}
}

// match finds r's route: ok false when no route has its path; a route
// with the path but another method comes back with methodOK false.
func (s *Server) match(r *http.Request) (rt route, ok, methodOK bool) {
	for _, c := range s.routes {
		if c.path == r.URL.Path || strings.HasSuffix(c.path, "/") && strings.HasPrefix(r.URL.Path, c.path) && len(r.URL.Path) > len(c.path) {
			if c.method == r.Method {
				return c, true, true
			}
			rt, ok = c, true
		}
	}
	return rt, ok, false
}

// ServeHTTP answers one request as OpenAI's or Anthropic's API would. A
// Reset fault closes the connection with a TCP reset; a Malformed fault
// drops it in the middle of the answer.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch s.handle(w, r, true) {
	case resetConn:
		resetConnection(w)
	case cutConn:
		// Send what was written, then abort: the client sees a body
		// shorter than its Content-Length, or a stream without its end.
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
}

// handle serves one request and says what the connection must do.
func (s *Server) handle(w http.ResponseWriter, r *http.Request, served bool) outcome {
	s.count(cRequests)
	rt, found, methodOK := s.match(r)
	d := byHeaders(r)
	if found {
		d = rt.dialectOf(r)
	}
	x := &exchange{s: s, w: w, r: r, d: d, seq: s.next(), served: served}
	var log *logEntry
	if s.cfg.LogRequests != nil {
		log, x.w = s.startLog(x)
		defer func() { s.finishLog(log, x) }()
	}
	x.requestID = requestID(x.seq)
	x.header().Set(d.requestIDHeader, x.requestID)
	for k, v := range d.everyResponse {
		x.header().Set(k, v)
	}
	if !found || !methodOK {
		x.fail(d.errs[errUnknownRoute](x))
		return answered
	}
	out := rt.serve(s, x)
	if log != nil {
		log.outcome = out
	}
	return out
}

// requestID is the id of the seq-th request.
func requestID(seq int64) string {
	const digits = "0123456789"
	b := []byte("req_mock000000000000")
	for i := len(b) - 1; seq > 0 && i >= len("req_mock"); i-- {
		b[i] = digits[seq%10]
		seq /= 10
	}
	return string(b)
}
