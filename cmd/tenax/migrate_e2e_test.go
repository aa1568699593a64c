package main

import (
	"strings"
	"testing"
)

// TestMigrateUpStatusDownAndUpAgain: migrate (up by default) makes the
// store's and the workers' tables at the latest version, status lists
// them, down refuses without --yes (exit 2, nothing undone) and with it
// drops them (the store's only once the workers' are gone), and up makes
// them again.
func TestMigrateUpStatusDownAndUpAgain(t *testing.T) {
	pg := postgresStore(t)
	w := fixLaterWorkdir(t)
	steps := []struct {
		args []string
		code int
		want string // in stdout, or stderr when the exit is not 0
	}{
		{[]string{"migrate"}, 0, "tenax: applied versions 1, 2, 3, 4"},
		{[]string{"migrate", "up"}, 0, "tables are ready"},
		{[]string{"migrate", "status"}, 0, "001 coordination   applied"},
		{[]string{"migrate", "status"}, 0, "001 jobs and records applied"},
		{[]string{"migrate", "status"}, 0, "002 response cache applied"},
		{[]string{"migrate", "down", "--line", "store", "--to", "0", "--yes"}, 1, "the workers' tables refer to tenax_jobs: take them down first"},
		{[]string{"migrate", "down", "--to", "0"}, 2, "tenax migrate down --to 0 --yes --store"},
		{[]string{"migrate", "status"}, 0, "001 coordination   applied"},
		{[]string{"migrate", "down", "--yes"}, 2, "needs --to N"},
		{[]string{"migrate", "down", "--to", "7", "--yes"}, 2, "knows versions 0 to 4"},
		{[]string{"migrate", "down", "--to", "3", "--yes"}, 0, "undid version 4 in schema"},
		{[]string{"migrate", "status"}, 0, "004 shared notify  pending"},
		{[]string{"migrate", "down", "--to", "2", "--yes"}, 0, "undid version 3 in schema"},
		{[]string{"migrate", "status"}, 0, "003 operator pause pending"},
		{[]string{"migrate", "down", "--to", "1", "--yes"}, 0, "undid version 2 in schema"},
		{[]string{"migrate", "status"}, 0, "002 breaker notify pending"},
		{[]string{"migrate", "down", "--to", "0", "--yes"}, 0, "undid version 1 in schema"},
		{[]string{"migrate", "status"}, 0, "001 coordination   pending"},
		{[]string{"migrate", "down", "--to", "0", "--yes"}, 0, "nothing to undo"},
		{[]string{"migrate", "down", "--line", "store", "--to", "0"}, 2, "tenax migrate down --to 0 --yes --line store --store"},
		{[]string{"migrate", "down", "--line", "store", "--to", "1", "--yes"}, 0, "undid version 2 in schema"},
		{[]string{"migrate", "status"}, 0, "002 response cache pending"},
		{[]string{"migrate", "down", "--line", "store", "--to", "0", "--yes"}, 0, "undid version 1 in schema"},
		{[]string{"migrate", "status"}, 0, "001 jobs and records pending"},
		{[]string{"migrate", "up"}, 0, "store: applied versions 1, 2"},
		{[]string{"migrate", "down", "--to", "0", "--yes"}, 0, "undid versions 4, 3, 2, 1"},
		{[]string{"migrate", "up"}, 0, "tenax: applied versions 1, 2, 3, 4"},
	}
	for _, s := range steps {
		r := w.tenax(append(s.args, "--store", pg)...)
		out := r.stdout
		if s.code != 0 {
			out = r.stderr
		}
		if r.code != s.code || !strings.Contains(out, s.want) {
			t.Fatalf("tenax %s: exit %d, want %d saying %q\n%s%s", strings.Join(s.args, " "), r.code, s.code, s.want, r.stdout, r.stderr)
		}
	}
}

// TestMigrateDownRefusalHidesTheStorePassword: the command migrate down
// prints to paste, without --yes, repeats --store with its password
// hidden.
func TestMigrateDownRefusalHidesTheStorePassword(t *testing.T) {
	w := fixLaterWorkdir(t)
	pg := "postgres://tenax:s3cret@127.0.0.1:5432/tenax?sslmode=disable"
	r := w.tenax("migrate", "down", "--to", "0", "--store", pg)
	if r.code != 2 || !strings.Contains(r.stderr, "--store 'postgres://tenax:xxxxx@127.0.0.1:5432/tenax") {
		t.Errorf("exit %d, want 2 with the command to paste, its password hidden:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "s3cret") {
		t.Errorf("migrate down shows the store's password:\n%s%s", r.stdout, r.stderr)
	}
}
