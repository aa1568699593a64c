package mock

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"
)

// maxLoggedBody caps the bytes of each body a log line holds.
const maxLoggedBody = 1 << 20

// logEntry is one request and its answer, as a line of
// Config.LogRequests.
type logEntry struct {
	start   time.Time
	outcome outcome
	capture *captureWriter
}

// logLine is the JSON of a logEntry.
type logLine struct {
	Time           string          `json:"time"`
	Seq            int64           `json:"seq"`
	Dialect        string          `json:"dialect"`
	Method         string          `json:"method"`
	Path           string          `json:"path"`
	RequestHeader  http.Header     `json:"request_header"`
	Request        json.RawMessage `json:"request,omitempty"`
	RequestText    string          `json:"request_text,omitempty"`
	Fault          string          `json:"fault,omitempty"`
	Outcome        string          `json:"outcome"`
	Status         int             `json:"status,omitempty"`
	ResponseHeader http.Header     `json:"response_header,omitempty"`
	Response       json.RawMessage `json:"response,omitempty"`
	ResponseText   string          `json:"response_text,omitempty"`
	DurationMS     float64         `json:"duration_ms"`
}

// captureWriter passes a response through and keeps a copy of it.
type captureWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *captureWriter) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *captureWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if room := maxLoggedBody - c.body.Len(); room > 0 {
		c.body.Write(p[:min(len(p), room)])
	}
	return c.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (c *captureWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// startLog begins x's log line and returns the writer that captures the
// answer.
func (s *Server) startLog(x *exchange) (*logEntry, http.ResponseWriter) {
	c := &captureWriter{ResponseWriter: x.w}
	return &logEntry{start: time.Now(), capture: c}, c
}

// finishLog writes x's log line.
func (s *Server) finishLog(e *logEntry, x *exchange) {
	line := logLine{
		Time: e.start.UTC().Format(time.RFC3339Nano), Seq: x.seq, Dialect: x.d.name,
		Method: x.r.Method, Path: x.r.URL.Path, RequestHeader: redact(x.r.Header),
		Outcome: [...]string{answered: "answered", resetConn: "reset", cutConn: "cut"}[e.outcome],
		Status:  e.capture.status, DurationMS: float64(time.Since(e.start).Microseconds()) / 1000,
	}
	if x.fault != faultNone {
		line.Fault = x.fault.String()
	}
	if x.abandoned && e.outcome == answered {
		// Answered after the client left: billed, never read.
		line.Outcome = "abandoned"
	}
	if e.capture.status != 0 {
		line.ResponseHeader = e.capture.Header().Clone()
	}
	line.Request, line.RequestText = loggedBody(x.body)
	line.Response, line.ResponseText = loggedBody(e.capture.body.Bytes())
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	_, _ = s.cfg.LogRequests.Write(append(b, '\n'))
}

// loggedBody is a body as JSON when it is JSON, else as text.
func loggedBody(b []byte) (json.RawMessage, string) {
	if len(b) == 0 {
		return nil, ""
	}
	if json.Valid(b) {
		var compact bytes.Buffer
		if json.Compact(&compact, b) == nil {
			return compact.Bytes(), ""
		}
	}
	return nil, string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}
