package main

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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

// googleChildEnv is the environment of a tenax child on Vertex AI: the
// application default credentials are the service-account file sa, and
// nothing of this machine's Google settings is read.
func googleChildEnv(sa string) []string {
	return []string{
		"GOOGLE_APPLICATION_CREDENTIALS=" + sa, "GOOGLE_CLOUD_PROJECT=", "GOOGLE_CLOUD_LOCATION=", "GOOGLE_CLOUD_REGION=",
		"GOOGLE_CLOUD_QUOTA_PROJECT=", "GOOGLE_API_KEY=", "GEMINI_API_KEY=", "GOOGLE_GENAI_USE_VERTEXAI=",
		"GOOGLE_VERTEX_BASE_URL=", "GOOGLE_GEMINI_BASE_URL=", "NO_GCE_CHECK=True",
	}
}

// serviceAccount writes a service-account key file whose token_uri is a
// token endpoint on loopback, and returns its path and the count of the
// tokens the endpoint handed out. The endpoint checks the JWT assertion's
// RS256 signature with the key's public half, as Google's does.
func serviceAccount(t *testing.T, dir string) (string, *atomic.Int64) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var issued atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
			http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
			return
		}
		parts := strings.Split(r.Form.Get("assertion"), ".")
		sig, err := base64.RawURLEncoding.DecodeString(parts[len(parts)-1])
		sum := sha256.Sum256([]byte(strings.Join(parts[:len(parts)-1], ".")))
		if len(parts) != 3 || err != nil || rsa.VerifyPKCS1v15(&key.PublicKey, crypto.SHA256, sum[:], sig) != nil {
			http.Error(w, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`, http.StatusBadRequest)
			return
		}
		issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"ya29.e2e-token","expires_in":3599,"token_type":"Bearer"}`)
	}))
	t.Cleanup(ts.Close)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	file, err := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "mock-project", "private_key_id": "e2e",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "tenax-e2e@mock-project.iam.gserviceaccount.com", "client_id": "1",
		"token_uri": ts.URL + "/token",
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sa.json")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, &issued
}

// TestTwoVertexRoutesCallTheirOwnLocations: two vertex routes, one in
// us-central1 and one in europe-west4 (the task's region is a third),
// each at a mock endpoint of its own, authenticated by the application
// default credentials (a service-account file whose token endpoint is on
// loopback). Every item succeeds, both routes serve some, and every
// request each endpoint saw is on its route's location's path, with an
// Authorization header (the token the endpoint handed out).
func TestTwoVertexRoutesCallTheirOwnLocations(t *testing.T) {
	endpoint := func() (*mock.Server, string) {
		srv := mock.New(mock.Config{Record: true})
		ts := httptest.NewServer(srv)
		t.Cleanup(ts.Close)
		return srv, ts.URL
	}
	us, usURL := endpoint()
	eu, euURL := endpoint()
	w := newWorkdir(t)
	sa, issued := serviceAccount(t, w.dir)
	w.items("items.jsonl", 30)
	w.write("job.yaml", fmt.Sprintf(`
input: items.jsonl
task:
  type: llm
  provider: vertex
  project: mock-project
  region: asia-northeast1
  prompt: "Describe item {{.n}}"
  timeout: 5s
routes:
  - {name: us, provider: vertex, region: us-central1, base_url: %s, model: mock-echo}
  - {name: eu, provider: vertex, region: europe-west4, base_url: %s, model: mock-echo}
retry: {max_attempts: 2, backoff: {base: 1ms, max: 5ms}}
breaker: {threshold: 1000}
concurrency: {max: 4}
cache: {enabled: false}
`, usURL, euURL), 0o644)
	r := w.tenaxEnv(googleChildEnv(sa), "run", "job.yaml", "--output", "out.jsonl")
	if r.code != 0 {
		t.Fatalf("run: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	served := map[string]int{}
	for _, rec := range readRouted(t, filepath.Join(w.dir, "out.jsonl")) {
		served[rec.Route]++
		if rec.Error != "" {
			t.Errorf("item %d on %s: %s; want success", rec.Idx, rec.Route, rec.Error)
		}
	}
	if served["us"] == 0 || served["eu"] == 0 || served["us"]+served["eu"] != 30 {
		t.Errorf("records by route %v; want 30, on both routes", served)
	}
	for _, tc := range []struct {
		srv      *mock.Server
		location string
		route    string
	}{{us, "us-central1", "us"}, {eu, "europe-west4", "eu"}} {
		want := "/v1/projects/mock-project/locations/" + tc.location + "/publishers/google/models/mock-echo:generateContent"
		reqs := tc.srv.Requests()
		if len(reqs) != served[tc.route] {
			t.Errorf("%s's endpoint saw %d requests, want %d, one per item it served", tc.route, len(reqs), served[tc.route])
		}
		for _, req := range reqs {
			if req.Path != want {
				t.Errorf("%s's endpoint saw a request to %s, want %s", tc.route, req.Path, want)
			}
			if req.Header.Get("Authorization") == "" {
				t.Errorf("%s's request had no Authorization: %v", tc.route, req.Header)
			}
		}
	}
	if issued.Load() == 0 {
		t.Error("no access token was asked of the service account's token endpoint")
	}
}
