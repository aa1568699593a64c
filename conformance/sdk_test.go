package conformance

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSDKConformance runs the Node SDK suite in sdk/ against a tenax
// built from this repository.
func TestSDKConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("the SDK conformance suite takes a minute; run it without -short")
	}
	if _, err := os.Stat(filepath.Join("sdk", "node_modules", "openai")); err != nil {
		t.Skip("SDK conformance: the Node SDKs are not installed; run npm ci in conformance/sdk or .ci/run")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SDK conformance: node is not on PATH; install Node 20+ and run npm ci in conformance/sdk or .ci/run")
	}
	bin := filepath.Join(t.TempDir(), "tenax")
	build := exec.Command("go", "build", "-o", bin, "../cmd/tenax")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building tenax: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-concurrency=2", "--test-reporter=spec")
	cmd.Dir = "sdk"
	cmd.Env = append(os.Environ(), "TENAX_BIN="+bin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("node --test in conformance/sdk:\n%s", out.String())
	if err != nil {
		t.Fatalf("the SDK conformance suite failed (%v): the mock drifted from what the real APIs answer; see the log above", err)
	}
}
