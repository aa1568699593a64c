package batch

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/task"
)

// TestAnEndlessBatchResultsFileIsAClearFailure: a provider's batch results
// file was read to its end however large, where every other answer is
// bounded. It is now read through ResultsBound (an answer's bound and its
// envelope per request) and no further: a file that goes on fails as a
// *task.AnswerTooLargeError naming the batch results file.
func TestAnEndlessBatchResultsFileIsAClearFailure(t *testing.T) {
	cases := []struct {
		wire, path string
		line       string
		client     func(url string, hc *http.Client) Client
	}{
		{"openai", "/v1/files/out-1/content", `{"custom_id":"x","response":{"status_code":200,"body":{}}}`,
			func(url string, hc *http.Client) Client { return NewOpenAI("openai", url+"/v1/", "k", hc, Limits{}) }},
		{"anthropic", "/v1/messages/batches/b-1/results", `{"custom_id":"x","result":{"type":"expired"}}`,
			func(url string, hc *http.Client) Client { return NewAnthropic("anthropic", url+"/", "k", hc, Limits{}) }},
	}
	for _, tc := range cases {
		t.Run(tc.wire, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != tc.path {
					http.NotFound(w, r)
					return
				}
				chunk := []byte(strings.Repeat(tc.line+"\n", 1000))
				for {
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			}))
			defer srv.Close()
			st := Status{ID: "b-1", Ended: true, Counts: Counts{Total: 1}, outputFile: "out-1"}
			answers := 0
			err := tc.client(srv.URL, srv.Client()).Results(t.Context(), st, func(Answer) error { answers++; return nil })
			var tooLarge *task.AnswerTooLargeError
			if !errors.As(err, &tooLarge) || tooLarge.What != "batch results file" || tooLarge.Limit != ResultsBound(st) {
				t.Fatalf("an endless results file: error %v after %d answers; want batch results file over %d bytes", err, answers, ResultsBound(st))
			}
			if max := ResultsBound(st) / int64(len(tc.line)); int64(answers) > max {
				t.Errorf("%d answers read, more than the bound holds (%d)", answers, max)
			}
		})
	}
}
