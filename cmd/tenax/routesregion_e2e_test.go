package main

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/mock"
)

// TestTwoBedrockRoutesSignForTheirOwnRegions: two bedrock routes, one in
// us-east-1 and one in eu-west-1, each at a mock endpoint that serves its
// region only and checks every SigV4 signature. Every item succeeds and
// both routes serve some: each route's calls were signed for its own
// region. With the regions swapped, every call is the endpoint's 403
// "Credential should be scoped to a valid region", fatal.
func TestTwoBedrockRoutesSignForTheirOwnRegions(t *testing.T) {
	creds := map[string]string{"AKIAMOCKE2E000000000": "mock-secret"}
	endpoint := func(region string) string {
		ts := httptest.NewServer(mock.New(mock.Config{AWSCredentials: creds, AWSRegion: region}))
		t.Cleanup(ts.Close)
		return ts.URL
	}
	east, west := endpoint("us-east-1"), endpoint("eu-west-1")
	const spec = `
input: items.jsonl
task:
  type: llm
  prompt: "Describe item {{.n}}"
  timeout: 5s
routes:
  - {name: east, provider: bedrock, region: %s, base_url: %s, model: mock-echo}
  - {name: west, provider: bedrock, region: %s, base_url: %s, model: mock-echo}
retry: {max_attempts: 2, backoff: {base: 1ms, max: 5ms}}
breaker: {threshold: 1000}
concurrency: {max: 4}
cache: {enabled: false}
`
	for _, tc := range []struct {
		name                   string
		eastRegion, westRegion string
		code                   int
	}{
		{"own regions", "us-east-1", "eu-west-1", 0},
		{"swapped regions", "eu-west-1", "us-east-1", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkdir(t)
			w.items("items.jsonl", 30)
			w.write("job.yaml", fmt.Sprintf(spec, tc.eastRegion, east, tc.westRegion, west), 0o644)
			r := w.tenaxEnv(awsChildEnv(t), "run", "job.yaml", "--output", "out.jsonl")
			if r.code != tc.code {
				t.Fatalf("run: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			served := map[string]int{}
			for _, rec := range readRouted(t, filepath.Join(w.dir, "out.jsonl")) {
				served[rec.Route]++
				switch {
				case tc.code == 0 && rec.Error != "":
					t.Errorf("item %d on %s: %s; want success, signed for the route's region", rec.Idx, rec.Route, rec.Error)
				case tc.code != 0 && !strings.Contains(rec.Error, "403 InvalidSignatureException: Credential should be scoped to a valid region"):
					t.Errorf("item %d on %s: error %q; want the endpoint's refusal of the other region's scope", rec.Idx, rec.Route, rec.Error)
				}
			}
			if served["east"] == 0 || served["west"] == 0 || served["east"]+served["west"] != 30 {
				t.Errorf("records by route %v; want 30, on both routes", served)
			}
		})
	}
}
