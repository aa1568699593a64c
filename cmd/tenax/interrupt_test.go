package main

import (
	"bytes"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/exitcode"
)

// lockedBuffer is a bytes.Buffer safe to read while the command writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCtrlCStopsACommandWaitingOnItsStore: execute asked for SIGINT,
// SIGTERM and SIGHUP for every command, but only run, resume, worker, fix,
// mock and ui read them, so Ctrl-C did nothing to `tenax status` waiting
// on a PostgreSQL store that does not answer: it waited on, for ever here.
// The first signal now cancels such a command's context, and tenax exits
// 130, saying it was interrupted.
func TestCtrlCStopsACommandWaitingOnItsStore(t *testing.T) {
	code, stderr := interruptWhenConnected(t, []string{"status", "--home", t.TempDir()})
	if code != exitcode.Interrupted {
		t.Errorf("exit %d after Ctrl-C, want %d (interrupted); stderr:\n%s", code, exitcode.Interrupted, stderr)
	}
	if !strings.Contains(stderr, "tenax: interrupted") {
		t.Errorf("stderr does not say the command was interrupted:\n%s", stderr)
	}
}

// interruptWhenConnected runs tenax with args and --store a PostgreSQL
// server that accepts connections and never answers, sends one SIGINT
// once tenax has connected, and returns its exit code and stderr.
func interruptWhenConnected(t *testing.T, args []string) (int, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
			accepted.Add(1)
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	sigs := make(chan os.Signal, 2)
	var stderr lockedBuffer
	code := make(chan int, 1)
	url := "postgres://tenax@" + ln.Addr().String() + "/tenax?sslmode=disable"
	go func() {
		code <- executeWith(append(args, "--store", url), strings.NewReader(""), &bytes.Buffer{}, &stderr, sigs)
	}()
	deadline := time.Now().Add(2 * time.Minute) // a safety net, not the assertion
	for accepted.Load() == 0 {
		select {
		case c := <-code:
			t.Fatalf("tenax %v ended (exit %d) before it reached the store: %s", args, c, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("tenax %v never connected to the store", args)
		}
		time.Sleep(10 * time.Millisecond)
	}
	sigs <- syscall.SIGINT
	select {
	case c := <-code:
		return c, stderr.String()
	case <-time.After(2 * time.Minute):
		t.Fatalf("tenax %v still waiting on its store two minutes after Ctrl-C", args)
		return 0, ""
	}
}

// TestCtrlCStopsARunStillConnectingOrEnqueuing: run and resume handle
// signals themselves, but read them only once their engine or workers
// ran: until then (connecting to the store, enqueuing a million items)
// Ctrl-C did nothing, and with --workers 0 never. Here the store accepts
// the connection and never answers: the first signal must stop the
// command, exit 130.
func TestCtrlCStopsARunStillConnectingOrEnqueuing(t *testing.T) {
	for _, args := range [][]string{
		{"run", "job.yaml"},
		{"resume", "job_x"},
		{"run", "job.yaml", "--workers", "0"},
		{"run", "job.yaml", "--workers", "2"},
		{"resume", "job_x", "--workers", "0"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			w := newWorkdir(t)
			w.items("items.jsonl", 3)
			w.write("job.yaml", "input: items.jsonl\ntask: {type: exec, argv: [echo, '{{.n}}']}\n", 0o644)
			t.Chdir(w.dir)
			code, stderr := interruptWhenConnected(t, append(args, "--home", w.home))
			if code != exitcode.Interrupted {
				t.Errorf("exit %d after Ctrl-C, want %d (interrupted); stderr:\n%s", code, exitcode.Interrupted, stderr)
			}
			if !strings.Contains(stderr, "interrupted") {
				t.Errorf("stderr does not say the run was interrupted:\n%s", stderr)
			}
		})
	}
}
