package classify

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// These tests classify errors produced by real sockets and processes, so
// that the defaults keep up with what the standard library really returns.

func TestRealRefusedDialIsRetryable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET to the closed port %s succeeded", addr)
	}
	want := Decision{Retryable, "ECONNREFUSED"}
	if got := Classify(wrapThreeDeep(err)); got != want {
		t.Errorf("Classify(%q) = %v, want %v", err, got, want)
	}
}

func TestRealConnectionResetIsRetryable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		// Linger 0 makes Close send a RST instead of a FIN.
		if err := conn.(*net.TCPConn).SetLinger(0); err != nil {
			t.Errorf("SetLinger: %v", err)
		}
		conn.Close()
	}))
	t.Cleanup(srv.Close)

	resp, err := srv.Client().Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("GET to a server that resets the connection succeeded")
	}
	want := Decision{Retryable, "ECONNRESET"}
	if got := Classify(wrapThreeDeep(err)); got != want {
		t.Errorf("Classify(%q) = %v, want %v", err, got, want)
	}
}

func TestRealClientTimeoutIsAttemptDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs before srv.Close, which waits for the handler

	t.Run("client timeout", func(t *testing.T) {
		client := &http.Client{Timeout: 100 * time.Millisecond}
		resp, err := client.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
			t.Fatal("GET to a server that never answers succeeded")
		}
		want := Decision{Retryable, "attempt deadline"}
		if got := Classify(wrapThreeDeep(err)); got != want {
			t.Errorf("Classify(%q) = %v, want %v", err, got, want)
		}
	})
	t.Run("context deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatal("GET to a server that never answers succeeded")
		}
		want := Decision{Retryable, "attempt deadline"}
		if got := Classify(wrapThreeDeep(err)); got != want {
			t.Errorf("Classify(%q) = %v, want %v", err, got, want)
		}
	})
	t.Run("context canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatal("GET with a canceled context succeeded")
		}
		want := Decision{Canceled, "run canceled"}
		if got := Classify(wrapThreeDeep(err)); got != want {
			t.Errorf("Classify(%q) = %v, want %v", err, got, want)
		}
	})
}

func TestRealReadDeadlineIsNetErrorTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// A deadline already passed fails the read at once, without waiting.
	if err := conn.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Read(make([]byte, 1))
	if err == nil {
		t.Fatal("read past its deadline succeeded")
	}
	want := Decision{Retryable, "net.Error timeout"}
	if got := Classify(wrapThreeDeep(err)); got != want {
		t.Errorf("Classify(%q) = %v, want %v", err, got, want)
	}
}

func TestRealCommandNotFoundIsFatal(t *testing.T) {
	notExecutable := filepath.Join(t.TempDir(), "script.sh")
	if err := os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		argv []string
		want Decision
	}{
		{"not on PATH", []string{"tenax-test-no-such-command"}, Decision{Fatal, "command not found"}},
		{"no such path", []string{filepath.Join(t.TempDir(), "missing")}, Decision{Fatal, "command not found"}},
		{"not executable", []string{notExecutable}, Decision{Fatal, "command not executable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := exec.CommandContext(t.Context(), tt.argv[0], tt.argv[1:]...).Run()
			if err == nil {
				t.Fatalf("running %q succeeded", tt.argv)
			}
			if got := Classify(wrapThreeDeep(err)); got != tt.want {
				t.Errorf("Classify(%q) = %v, want %v", err, got, tt.want)
			}
		})
	}
}
