package postgres_test

import (
	"context"
	_ "embed"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenaxhq/tenax/store/postgres"
)

// legacySQL is what Open ran at every start before the store's versions
// were numbered, as it was in the last tenax to do so.
//
//go:embed testdata/legacy.sql
var legacySQL string

// firstShippedSQL is the store's tables as an early tenax made them:
// no tenax_notes, no indexes, and a foreign key on tenax_records later
// replaced by a trigger.
const firstShippedSQL = `
CREATE TABLE tenax_jobs (id text PRIMARY KEY, created timestamptz NOT NULL,
	updated timestamptz NOT NULL, manifest jsonb NOT NULL);
CREATE TABLE tenax_records (seq bigserial PRIMARY KEY,
	job_id text NOT NULL REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	idx bigint NOT NULL, failed boolean NOT NULL, record json NOT NULL);`

// rawPool returns a pool on a schema of its own, with nothing in it.
func rawPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// run executes sql on pool, failing the test on an error.
func run(t *testing.T, pool *pgxpool.Pool, sql string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// column returns the first column of query's rows.
func column(t *testing.T, pool *pgxpool.Pool, query string) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}

// storeShape describes the store's tables of the schema: every column
// with its type, nullability and default, every constraint and index,
// and the triggers on tenax_jobs, for two schemas to be compared.
func storeShape(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	return column(t, pool, `
	SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
		FROM information_schema.columns WHERE table_schema = current_schema()
		AND table_name IN ('tenax_jobs', 'tenax_records', 'tenax_notes')
	UNION ALL
	SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
		FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
	UNION ALL
	SELECT 'index ' || regexp_replace(indexdef, ' ON \S+\.', ' ON ') FROM pg_indexes WHERE schemaname = current_schema()
	UNION ALL
	SELECT 'trigger ' || tgname || ' ' || tgfoid::regproc::text FROM pg_trigger
		WHERE tgrelid = 'tenax_jobs'::regclass AND NOT tgisinternal
	ORDER BY 1`)
}

// storeTables returns the store's tables the schema has.
func storeTables(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	return column(t, pool, `SELECT table_name::text FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_name IN ('tenax_jobs', 'tenax_records', 'tenax_notes',
			'tenax_cache', 'tenax_cache_rejected', 'tenax_cache_size')
		ORDER BY 1`)
}

// TestStoreMigratesUpDownAndUpAgain: an empty schema gets versions 1
// and 2, the three tables and the response cache's, a second Migrate
// finds nothing to do, Down to 1 drops the cache's tables alone, Down to
// 0 the rest, and Up makes them again.
func TestStoreMigratesUpDownAndUpAgain(t *testing.T) {
	pool := rawPool(t)
	line := postgres.Migrations()
	res, err := postgres.Migrate(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	if res.Adopted || !slices.Equal(res.Versions, []int{1, 2}) {
		t.Errorf("first Migrate: %+v, want versions 1 and 2 applied, nothing adopted", res)
	}
	want := []string{"tenax_cache", "tenax_cache_rejected", "tenax_cache_size", "tenax_jobs", "tenax_notes", "tenax_records"}
	if got := storeTables(t, pool); !slices.Equal(got, want) {
		t.Errorf("tables after Migrate: %v, want %v", got, want)
	}
	if res, err = postgres.Migrate(t.Context(), pool); err != nil || len(res.Versions) > 0 || res.Adopted {
		t.Errorf("second Migrate: %+v, %v, want nothing to do", res, err)
	}
	if res, err = line.Down(t.Context(), pool, 1); err != nil || !slices.Equal(res.Versions, []int{2}) {
		t.Fatalf("Down to 1: %+v, %v, want version 2 undone", res, err)
	}
	if got := storeTables(t, pool); !slices.Equal(got, want[3:]) {
		t.Errorf("tables after Down to 1: %v, want %v", got, want[3:])
	}
	if got := column(t, pool, `SELECT proname::text FROM pg_proc WHERE pronamespace = current_schema()::regnamespace ORDER BY 1`); !slices.Equal(got, []string{"tenax_records_delete_job"}) {
		t.Errorf("functions after Down to 1: %v, want version 1's alone", got)
	}
	if res, err = line.Down(t.Context(), pool, 0); err != nil || !slices.Equal(res.Versions, []int{1}) {
		t.Fatalf("Down to 0: %+v, %v, want version 1 undone", res, err)
	}
	if got := storeTables(t, pool); len(got) > 0 {
		t.Errorf("tables after Down to 0: %v, want none", got)
	}
	if got := column(t, pool, `SELECT proname::text FROM pg_proc WHERE pronamespace = current_schema()::regnamespace`); len(got) > 0 {
		t.Errorf("functions after Down to 0: %v, want none", got)
	}
	st, err := line.Read(t.Context(), pool)
	if err != nil || st.Unversioned || !st.Versions[0].Applied.IsZero() {
		t.Errorf("status after Down to 0: %+v, %v, want version 1 pending", st, err)
	}
	if res, err = line.Up(t.Context(), pool); err != nil || !slices.Equal(res.Versions, []int{1, 2}) {
		t.Errorf("Up after Down: %+v, %v, want versions 1 and 2 applied again", res, err)
	}
}

// TestStoreAdoptsTheTablesOfATenaxBeforeVersions: a schema whose store
// tables a tenax from before the numbered versions made (with CREATE
// TABLE IF NOT EXISTS, no tenax_store_migration) is adopted as version 1
// by Open, its jobs and records kept, and ends as a fresh schema's
// version 1 does, whichever earlier tenax made it; deleting a job still
// deletes its records.
func TestStoreAdoptsTheTablesOfATenaxBeforeVersions(t *testing.T) {
	fresh := rawPool(t)
	if _, err := postgres.Migrate(t.Context(), fresh); err != nil {
		t.Fatal(err)
	}
	want := storeShape(t, fresh)
	for _, tc := range []struct{ name, sql string }{
		{"the last unversioned tenax", legacySQL},
		{"an early tenax", firstShippedSQL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := testDSN(t)
			pool, err := pgxpool.New(t.Context(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			run(t, pool, tc.sql)
			run(t, pool, `INSERT INTO tenax_jobs (id, created, updated, manifest) VALUES ('a', now(), now(), '{}'), ('b', now(), now(), '{}')`)
			run(t, pool, `INSERT INTO tenax_records (job_id, idx, failed, record) VALUES ('a', 0, false, '{}'), ('b', 0, true, '{}')`)
			st, err := postgres.Migrations().Read(t.Context(), pool)
			if err != nil || !st.Unversioned {
				t.Errorf("status before adoption: %+v, %v, want unversioned", st, err)
			}
			openStore(t, dsn) // Open migrates
			if got := storeShape(t, pool); !slices.Equal(got, want) {
				t.Errorf("adopted schema differs from a migrated one:\n%s", diff(got, want))
			}
			if st, err = postgres.Migrations().Read(t.Context(), pool); err != nil || st.Unversioned || !st.Versions[0].Adopted {
				t.Errorf("status after adoption: %+v, %v, want version 1 recorded as adopted", st, err)
			}
			run(t, pool, `DELETE FROM tenax_jobs WHERE id = 'a'`)
			if got := column(t, pool, `SELECT job_id FROM tenax_records ORDER BY job_id`); !slices.Equal(got, []string{"b"}) {
				t.Errorf("records after adopting and deleting job a: jobs %v, want [b]: kept, and a's gone with it", got)
			}
		})
	}
}

// diff lists the lines only one of got and want has.
func diff(got, want []string) string {
	var b strings.Builder
	for _, g := range got {
		if !slices.Contains(want, g) {
			b.WriteString("  only adopted: " + g + "\n")
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			b.WriteString("  only migrated: " + w + "\n")
		}
	}
	return b.String()
}
