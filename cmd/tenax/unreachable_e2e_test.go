package main

import (
	"net"
	"strings"
	"testing"
)

// closedPort returns a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestAnUnreachableDatabaseExitsFourInEveryCommand: with a --store whose
// database is unreachable, migrate, worker and breaker exited 4 (tenax's
// own storage failed) but ui, status and export exited 1. Every command
// exits 4, naming the store, its password hidden.
func TestAnUnreachableDatabaseExitsFourInEveryCommand(t *testing.T) {
	w := fixLaterWorkdir(t)
	addr := closedPort(t)
	pg := "postgres://tenax:s3cret@" + addr + "/tenax?sslmode=disable"
	for _, args := range [][]string{
		{"run", "job.yaml"},
		{"run", "job.yaml", "--workers", "0"},
		{"resume", "job_20261123_101500"},
		{"status"},
		{"status", "latest"},
		{"export", "latest"},
		{"ui"},
		{"migrate"},
		{"worker", "--all"},
		{"breaker", "continue", "latest"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := w.tenax(append(args, "--store", pg)...)
			if r.code != 4 || !strings.Contains(r.stderr, addr) {
				t.Errorf("exit %d, want 4 naming the database at %s:\n%s%s", r.code, addr, r.stdout, r.stderr)
			}
			if strings.Contains(r.stderr, "s3cret") {
				t.Errorf("the message shows the store's password:\n%s", r.stderr)
			}
		})
	}
}
