package worker_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/internal/pgtest"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// TestAFailedConnectionNamesTheStoreNotAPackage: tenax migrate and tenax
// breaker reported a database they could not reach as "tenax: worker:
// failed to connect…", naming a Go package the operator never chose. The
// error names the store, its password hidden, and is a *store.OpenError
// (exit 4 in every command).
func TestAFailedConnectionNamesTheStoreNotAPackage(t *testing.T) {
	addr := pgtest.ClosedAddr(t)
	dsn := "postgres://tenax:s3cret@" + addr + "/tenax?sslmode=disable"
	c, err := worker.Open(t.Context(), dsn)
	if err == nil {
		c.Close()
		t.Fatalf("opened %s, where nothing listens", addr)
	}
	var oe *store.OpenError
	if !errors.As(err, &oe) {
		t.Errorf("error %T %v, want a *store.OpenError", err, err)
	}
	msg := err.Error()
	if want := "opening the store postgres://tenax:xxxxx@" + addr + "/tenax?sslmode=disable: failed to connect"; !strings.HasPrefix(msg, want) {
		t.Errorf("error %q, want it to begin %q", msg, want)
	}
	if strings.Contains(msg, "worker:") || strings.Contains(msg, "s3cret") {
		t.Errorf("error %q names the package or shows the password", msg)
	}
}
