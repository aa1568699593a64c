package main

import (
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/internal/pgtest"
)

// storeCommands are the commands that open a --store, each as a user
// would type it (--store comes last).
var storeCommands = [][]string{
	{"run", "job.yaml"},
	{"run", "job.yaml", "--workers", "0"},
	{"resume", "job_20261123_101500"},
	{"status"},
	{"status", "latest"},
	{"export", "latest"},
	{"ui"},
	{"migrate"},
	{"migrate", "status"},
	{"migrate", "down", "--to", "0", "--yes"},
	{"worker", "--all"},
	{"breaker", "continue", "latest"},
}

// TestAnUnreachableDatabaseExitsFourInEveryCommand: with a --store whose
// database is unreachable, migrate, worker and breaker exited 4 (tenax's
// own storage failed) but ui, status and export exited 1. Every command
// exits 4, naming the store, its password hidden.
func TestAnUnreachableDatabaseExitsFourInEveryCommand(t *testing.T) {
	w := fixLaterWorkdir(t)
	addr := pgtest.ClosedAddr(t)
	pg := "postgres://tenax:s3cret@" + addr + "/tenax?sslmode=disable"
	for _, args := range storeCommands {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := w.tenax(append(args, "--store", pg)...)
			if r.code != 4 || !strings.Contains(r.stderr, addr) {
				t.Errorf("exit %d, want 4 naming the database at %s:\n%s%s", r.code, addr, r.stdout, r.stderr)
			}
			if strings.Contains(r.stderr, "creating tenax tables") {
				t.Errorf("a database out of reach is reported as tables that could not be made:\n%s", r.stderr)
			}
			if strings.Contains(r.stderr, "s3cret") {
				t.Errorf("the message shows the store's password:\n%s", r.stderr)
			}
		})
	}
}

// TestAMalformedDatabaseAddressIsAUsageError: an address that passed
// tenax's URL check but that pgx refuses (sslmode=bogus) was reported as
// the storage failing (exit 4). It is the user's input: every command
// exits 2 saying what is wrong, its password hidden, before connecting.
func TestAMalformedDatabaseAddressIsAUsageError(t *testing.T) {
	w := fixLaterWorkdir(t)
	for _, bad := range []struct{ address, wrong string }{
		{"postgres://tenax:s3cret@127.0.0.1:5432/tenax?sslmode=bogus", "sslmode is invalid"},
		{"postgres://tenax:s3cret@127.0.0.1:5432/tenax?connect_timeout=soon", "connect_timeout"},
	} {
		for _, args := range storeCommands {
			t.Run(bad.wrong+"/"+strings.Join(args, " "), func(t *testing.T) {
				r := w.tenax(append(args, "--store", bad.address)...)
				if r.code != 2 || !strings.Contains(r.stderr, bad.wrong) {
					t.Errorf("exit %d, want 2 saying %q:\n%s%s", r.code, bad.wrong, r.stdout, r.stderr)
				}
				if strings.Contains(r.stderr, "s3cret") {
					t.Errorf("the message shows the store's password:\n%s", r.stderr)
				}
			})
		}
	}
}
