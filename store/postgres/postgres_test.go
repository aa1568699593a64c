package postgres_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/internal/pgtest"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/postgres"
	"github.com/tenaxhq/tenax/store/storetest"
)

// testDSN returns the DSN of a schema of its own for this test, dropped
// at cleanup, so that test runs never see each other's jobs.
func testDSN(t *testing.T) string {
	t.Helper()
	return pgtest.DSN(t, "tenax_test_")
}

func openStore(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestPostgresStoreConformance(t *testing.T) {
	pgtest.Require(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return openStore(t, testDSN(t))
	})
}

// TestAnUnreachableDatabaseIsReportedAsAFailedConnection: Open reported
// a database it could not reach as "postgres: creating tenax tables:
// failed to connect…", as if the tables had failed. It says it could not
// connect, naming the database, never its password.
func TestAnUnreachableDatabaseIsReportedAsAFailedConnection(t *testing.T) {
	addr := pgtest.ClosedAddr(t)
	s, err := postgres.Open(t.Context(), "postgres://tenax:s3cret@"+addr+"/tenax?sslmode=disable")
	if err == nil {
		s.Close()
		t.Fatalf("opened %s, where nothing listens", addr)
	}
	msg := err.Error()
	if want := "connecting to PostgreSQL tenax at " + addr + ": failed to connect"; !strings.HasPrefix(msg, want) {
		t.Errorf("error %q, want it to begin %q", msg, want)
	}
	if strings.Contains(msg, "tables") || strings.Contains(msg, "s3cret") {
		t.Errorf("error %q blames the tables or shows the password", msg)
	}
}

func TestPostgresOpenCreatesTablesOnceUnderConcurrency(t *testing.T) {
	dsn := testDSN(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), dsn)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent Open %d on a fresh schema: %v", i, err)
		}
	}
}

func TestPostgresJobsSurviveANewStore(t *testing.T) {
	dsn := testDSN(t)
	first := openStore(t, dsn)
	j, err := first.Create(t.Context(), store.Manifest{Name: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(t.Context(), storetest.FullRecord(0)); err != nil {
		t.Fatal(err)
	}
	first.Close()

	second := openStore(t, dsn)
	r, err := second.OpenReadOnly(t.Context(), j.Manifest().ID)
	if err != nil {
		t.Fatalf("OpenReadOnly from a new Store: %v", err)
	}
	var got []store.Record
	if err := r.Scan(t.Context(), func(rec store.Record) error { got = append(got, rec); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("a new Store saw %d records, want 1", len(got))
	}
	if msg := storetest.DiffRecord(got[0], storetest.FullRecord(0)); msg != "" {
		t.Errorf("record read by a new Store: %s", msg)
	}
}

// TestEncodeKeepsWhatTheStoreReadsBack: a record encoded ahead (as a
// worker's group writes it) carries its idx, whether it failed, and the
// record's own JSON, which decodes to the record.
func TestEncodeKeepsWhatTheStoreReadsBack(t *testing.T) {
	cases := []struct {
		name       string
		rec        store.Record
		wantFailed bool
	}{
		{name: "succeeded", rec: store.Record{Idx: 7, Output: []byte(`{"es":"hola"}`)}},
		{name: "failed", rec: store.Record{Idx: 9, Output: []byte(`null`), Error: "boom", Class: classify.Item}, wantFailed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			enc, err := postgres.Encode(tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			if enc.Idx != int64(tc.rec.Idx) || enc.Failed != tc.wantFailed {
				t.Errorf("encoded idx %d, failed %v; want %d, %v", enc.Idx, enc.Failed, tc.rec.Idx, tc.wantFailed)
			}
			var back store.Record
			if err := json.Unmarshal([]byte(enc.Doc), &back); err != nil {
				t.Fatalf("the encoded record %s is not JSON: %v", enc.Doc, err)
			}
			if back.Idx != tc.rec.Idx || back.Error != tc.rec.Error || string(back.Output) != string(tc.rec.Output) {
				t.Errorf("decoded %+v from %s, want the record %+v", back, enc.Doc, tc.rec)
			}
		})
	}
}
