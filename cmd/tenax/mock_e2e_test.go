package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startMock starts `tenax mock` on a free port with args and returns the
// process and its base URL (host:port).
func startMock(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(tenaxBin, append([]string{"mock", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = childEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the listening line: %v (stderr: %s)", err, errb.String())
	}
	var openaiURL, anthropicURL string
	if _, err := fmt.Sscanf(line, "mock provider listening: OpenAI base URL %s Anthropic base URL %s", &openaiURL, &anthropicURL); err != nil {
		t.Fatalf("listening line %q: %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return cmd, strings.TrimPrefix(anthropicURL, "http://")
}

// TestMockStopsGracefullyOnInterrupt: Ctrl-C stops `tenax mock` with exit
// 0, and a request in flight still gets its answer. The request asks for
// 100-continue so that the test knows its handler is running (the server
// sends 100 Continue when the handler reads the body) before it sends
// SIGINT.
func TestMockStopsGracefullyOnInterrupt(t *testing.T) {
	cmd, addr := startMock(t, "--latency", "1s")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"model": "mock-echo", "max_tokens": 10, "messages": [{"role": "user", "content": "still here"}]}`
	fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: %s\r\nx-api-key: k\r\nanthropic-version: 2023-06-01\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", addr, len(body))
	r := bufio.NewReader(conn)
	cont, err := http.ReadResponse(r, nil)
	if err != nil || cont.StatusCode != http.StatusContinue {
		t.Fatalf("want 100 Continue before the body, got %v %v", cont, err)
	}
	if _, err := io.WriteString(conn, body); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("the request in flight lost its answer: %v", err)
	}
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), "still here") {
		t.Errorf("in-flight answer = %d %s, want 200 with the echo", resp.StatusCode, answer)
	}
	if code := waitExit(t, cmd, 30*time.Second); code != 0 {
		t.Errorf("tenax mock exited %d after SIGINT, want 0", code)
	}
}

// TestMockStopsOnSIGTERM: SIGTERM stops an idle `tenax mock` with exit 0.
func TestMockStopsOnSIGTERM(t *testing.T) {
	cmd, _ := startMock(t)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, 30*time.Second); code != 0 {
		t.Errorf("tenax mock exited %d after SIGTERM, want 0", code)
	}
}

// TestMockLogRequests: --log-requests appends each request and answer as
// a JSON line, the API key redacted.
func TestMockLogRequests(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "requests.jsonl")
	cmd, addr := startMock(t, "--log-requests", logPath)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions",
		strings.NewReader(`{"model": "mock-echo", "messages": [{"role": "user", "content": "logged"}]}`))
	req.Header.Set("Authorization", "Bearer sk-e2e-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_ = cmd.Process.Signal(os.Interrupt)
	if code := waitExit(t, cmd, 30*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGINT, want 0", code)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var line struct {
		Status        int
		RequestHeader http.Header `json:"request_header"`
		Request       struct{ Messages []struct{ Content string } }
	}
	if err := json.Unmarshal(data, &line); err != nil {
		t.Fatalf("log %q: %v", data, err)
	}
	if strings.Contains(string(data), "sk-e2e-secret") || line.RequestHeader.Get("Authorization") != "REDACTED" {
		t.Errorf("the log holds the API key: %s", data)
	}
	if line.Status != 200 || len(line.Request.Messages) != 1 || line.Request.Messages[0].Content != "logged" {
		t.Errorf("log line %s: want the request's message and its 200", data)
	}
}
