package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// EnvVar names the environment variable holding the test database's DSN.
const EnvVar = "TENAX_TEST_POSTGRES"

// howToRun is why a PostgreSQL test skipped, and how to run it.
const howToRun = "set " + EnvVar + " to a database to run the PostgreSQL tests: " +
	EnvVar + "=postgres://postgres@127.0.0.1:5432/test?sslmode=disable go test ./..."

// Require skips the test, saying how to run it, when EnvVar is unset:
// for a test that makes its schemas later, in subtests.
func Require(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvVar) == "" {
		t.Skip(howToRun)
	}
}

// ClosedAddr returns a loopback host:port where nothing listens: a
// database out of reach, for the tests of what tenax says about one.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// DSN returns the DSN of a new schema, named prefix and random hex, whose
// search_path is that schema alone. The schema exists; it is dropped at
// cleanup. Without EnvVar the test is skipped, saying how to run it.
func DSN(t testing.TB, prefix string) string {
	t.Helper()
	dsn, schema := newSchema(t, prefix)
	exec(t, dsn, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	return dsn
}

// AbsentDSN is DSN for a schema that does not exist yet, for the tests
// of the code that creates it. It is dropped at cleanup all the same.
func AbsentDSN(t testing.TB, prefix string) string {
	t.Helper()
	dsn, _ := newSchema(t, prefix)
	return dsn
}

// newSchema picks the schema's name, arranges for it to be dropped, and
// returns the DSN that names it.
func newSchema(t testing.TB, prefix string) (dsn, schema string) {
	t.Helper()
	Require(t)
	base := os.Getenv(EnvVar)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema = prefix + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	if !strings.HasPrefix(base, "postgres://") && !strings.HasPrefix(base, "postgresql://") {
		// A keyword/value DSN: a later keyword overrides an earlier one.
		return base + " search_path=" + schema, schema
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvVar, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), schema
}

// exec runs sql on the test database.
func exec(t testing.TB, dsn, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to %s: %v", EnvVar, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
