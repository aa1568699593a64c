package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/mock"
)

// tiktokenShim stands in for the tiktoken package, which cannot be
// installed here (no PyPI): a token is counted as four characters, the
// usual rule of thumb. The cookbook's script only uses it to count tokens
// against max_tokens_per_minute, which the benchmark sets far above use.
const tiktokenShim = `class _Encoding:
    def encode(self, text):
        return [0] * (len(text) // 4 + 1)

def get_encoding(name):
    return _Encoding()
`

// cookbook runs the OpenAI cookbook's api_request_parallel_processor.py
// (obtained at benchmark time, never committed: -cookbook names it) over
// the same requests, told rpm requests per minute.
func (g goodput) cookbook(ctx context.Context, variant string, srv *mock.Server, hs *httptest.Server, rpm int) (goodputRun, error) {
	if g.Cookbook == "" {
		return goodputRun{}, fmt.Errorf("%s: -cookbook must name api_request_parallel_processor.py (from github.com/openai/openai-cookbook, examples/)", variant)
	}
	dir, err := os.MkdirTemp("", "llmbench-cookbook-")
	if err != nil {
		return goodputRun{}, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "tiktoken.py"), []byte(tiktokenShim), 0o644); err != nil {
		return goodputRun{}, err
	}
	var b strings.Builder
	for i := range g.Items {
		line, _ := json.Marshal(map[string]any{
			"model":    "mock-echo",
			"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("w%d", i)}},
			"metadata": map[string]int{"i": i},
		})
		b.Write(line)
		b.WriteByte('\n')
	}
	reqs, saved := filepath.Join(dir, "requests.jsonl"), filepath.Join(dir, "results.jsonl")
	if err := os.WriteFile(reqs, []byte(b.String()), 0o644); err != nil {
		return goodputRun{}, err
	}
	// The script's aiohttp trusts the test server's certificate through
	// OpenSSL's SSL_CERT_FILE.
	certFile := filepath.Join(dir, "cert.pem")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hs.Certificate().Raw})
	if err := os.WriteFile(certFile, cert, 0o644); err != nil {
		return goodputRun{}, err
	}
	cmd := exec.CommandContext(ctx, cmp.Or(g.Python, "python3"), g.Cookbook,
		"--requests_filepath", reqs, "--save_filepath", saved,
		"--request_url", hs.URL+"/v1/chat/completions", "--api_key", "any",
		"--max_requests_per_minute", fmt.Sprint(rpm), "--max_tokens_per_minute", "1000000000",
		"--max_attempts", "10", "--logging_level", "40")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+dir, "SSL_CERT_FILE="+certFile)
	cmd.Stderr = os.Stderr

	r := goodputRun{variant: variant}
	s := newSeries()
	before := srv.Stats()
	start := time.Now()
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return goodputRun{}, err
	}
	go func() { done <- cmd.Wait() }()
	// Its successes over time, from the lines it saves.
	seen := 0
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var runErr error
wait:
	for {
		select {
		case runErr = <-done:
			break wait
		case <-tick.C:
			ok, _, _ := countSaved(saved)
			s.add(time.Since(start), ok-seen)
			seen = ok
		}
	}
	r.elapsed = time.Since(start)
	if runErr != nil {
		return goodputRun{}, fmt.Errorf("%s: %w", variant, runErr)
	}
	ok, failed, err := countSaved(saved)
	if err != nil {
		return goodputRun{}, err
	}
	s.add(r.elapsed, ok-seen)
	after := srv.Stats()
	r.succeeded, r.failed = ok, failed
	r.pending = g.Items - ok - failed
	r.requests = after.Requests - before.Requests
	r.limited = after.RateLimited - before.RateLimited
	r.calls = int(r.requests)
	r.to90 = s.reached(0.9 * float64(g.RPM) / 60)
	r.steady = s.steady()
	if g.Series != "" {
		if err := s.write(filepath.Join(g.Series, variant+".csv")); err != nil {
			return goodputRun{}, err
		}
	}
	return r, nil
}

// countSaved counts the cookbook's saved lines: [request, response,
// metadata] where the response holds choices is a success; [request,
// [errors], metadata] a failure.
func countSaved(path string) (ok, failed int, err error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line []json.RawMessage
		if json.Unmarshal(sc.Bytes(), &line) != nil || len(line) < 2 {
			continue // a line being written
		}
		var resp struct {
			Choices []json.RawMessage `json:"choices"`
		}
		if json.Unmarshal(line[1], &resp) == nil && len(resp.Choices) > 0 {
			ok++
		} else {
			failed++
		}
	}
	return ok, failed, sc.Err()
}
