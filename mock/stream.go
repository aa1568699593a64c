package mock

import (
	"bytes"
	"net/http"
)

// sse is one server-sent event: "event: name" (when name is set) and
// "data: data".
func sse(name string, data []byte) []byte {
	var b bytes.Buffer
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	return b.Bytes()
}

// pieces splits s into the deltas of a stream: a word at a time, at most
// 16 bytes, never inside a rune.
func pieces(s string) []string {
	var out []string
	start := 0
	for i, r := range s {
		if i-start >= 16 {
			out = append(out, s[start:i])
			start = i
		}
		if r == ' ' && i+1-start > 0 {
			out = append(out, s[start:i+1])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// stream sends a as the dialect's event stream, flushing each event. A
// Malformed fault drops the connection halfway; a Server or Overloaded
// fault sends the dialect's error event halfway and ends the stream.
func (s *Server) stream(x *exchange, a answer) outcome {
	events := x.d.events(x, a)
	h := x.header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Del("Content-Length")
	x.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(x.w)
	half := max(len(events)/2, 1)
	for i, ev := range events {
		if i == half {
			switch x.fault {
			case faultMalformed:
				s.count(cMalformed)
				return cutConn
			case faultServer, faultOverloaded:
				e := x.d.errs[faultErr[x.fault]](x)
				s.count(e.counter)
				_, _ = x.w.Write(x.d.streamError(x, e))
				_ = rc.Flush()
				return answered
			}
		}
		if _, err := x.w.Write(ev); err != nil {
			return answered // the client is gone
		}
		_ = rc.Flush()
		if x.r.Context().Err() != nil {
			return answered
		}
	}
	s.count(faultCounter[x.fault])
	return answered
}
