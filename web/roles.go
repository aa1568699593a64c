package web

import (
	"context"
	"crypto/subtle"
	"net/http"
)

// Role is what a request may do: see every page and chart, or act too.
// The token a request carries says which (Config.Token, Config.ViewToken);
// without tokens, on loopback, every request is an operator's.
type Role int

const (
	// Operator answers the breaker and check-ins, re-runs failures,
	// pauses, continues and stops runs and steers fix runs, and sees
	// everything a viewer sees.
	Operator Role = iota
	// Viewer sees every page, chart and download and changes nothing:
	// its POSTs are refused (403) and the pages show it no action.
	Viewer
)

func (r Role) String() string {
	if r == Viewer {
		return "viewer"
	}
	return "operator"
}

type roleKey struct{}

// RoleOf returns the role of the request whose context ctx is: Operator
// for a context the Server did not serve.
func RoleOf(ctx context.Context) Role {
	r, _ := ctx.Value(roleKey{}).(Role)
	return r
}

// roleOf returns the role a token gives, false for none.
func (s *Server) roleOf(token string) (Role, bool) {
	if s.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.Token)) == 1 {
		return Operator, true
	}
	if s.cfg.ViewToken != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.ViewToken)) == 1 {
		return Viewer, true
	}
	return 0, false
}

// serveAs serves r in role: a viewer's request that could change
// something (anything but GET and HEAD) is refused, whatever it asks.
func (s *Server) serveAs(w http.ResponseWriter, r *http.Request, role Role) {
	if role == Viewer && r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "this page was opened with the view token: it shows everything and changes nothing; answers, re-runs, pause and stop need the operator token", http.StatusForbidden)
		return
	}
	s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), roleKey{}, role)))
}

// formSecret is the form secret the pages of ctx's request carry: none
// for a viewer, whose pages therefore show no form and no action.
func (s *Server) formSecret(ctx context.Context) string {
	if RoleOf(ctx) == Viewer {
		return ""
	}
	return s.csrf
}
