package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/store/memory"
)

// TestFaviconIsServed: every page a browser opened logged a 404 for
// /favicon.ico in its console; the page serves tenax's icon there now,
// with or without a store.
func TestFaviconIsServed(t *testing.T) {
	for name, cfg := range map[string]Config{"jobs": {Store: &memory.Store{}}, "metrics only": {}} {
		t.Run(name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/favicon.ico", nil)
			req.Host = "127.0.0.1:1"
			rec := httptest.NewRecorder()
			New(cfg).ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "image/svg+xml" || !strings.Contains(rec.Body.String(), "<svg") {
				t.Errorf("GET /favicon.ico: %d %q %.40q; want 200 with an SVG icon", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
			}
		})
	}
}
