package migration_test

import (
	"context"
	_ "embed"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenaxhq/tenax/internal/pgtest"
	"github.com/tenaxhq/tenax/store/postgres"
	"github.com/tenaxhq/tenax/worker/migration"
)

// legacySQL is what worker.Migrate ran at every start before the
// versions were numbered, as it was in the last tenax to do so.
//
//go:embed testdata/legacy.sql
var legacySQL string

// firstShippedSQL is the workers' tables as the first tenax with workers
// made them: fewer tables, fewer columns, and tenax_finals with the
// foreign key later replaced by a trigger.
const firstShippedSQL = `
CREATE TABLE tenax_queues (job_id text PRIMARY KEY REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	queue text NOT NULL UNIQUE, spec_path text NOT NULL, spec_source text NOT NULL,
	format text NOT NULL, round integer NOT NULL DEFAULT 1, created timestamptz NOT NULL DEFAULT now());
CREATE TABLE tenax_finals (job_id text NOT NULL REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	idx bigint NOT NULL, round integer NOT NULL, PRIMARY KEY (job_id, idx, round));
CREATE TABLE tenax_workers (id text PRIMARY KEY, host text NOT NULL, pid integer NOT NULL,
	jobs text[] NOT NULL DEFAULT '{}', concurrency integer NOT NULL, in_flight integer NOT NULL DEFAULT 0,
	finished bigint NOT NULL DEFAULT 0, started timestamptz NOT NULL DEFAULT now(),
	heartbeat timestamptz NOT NULL DEFAULT now(), stopped timestamptz);
CREATE TABLE tenax_breakers (job_id text PRIMARY KEY REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	state text NOT NULL DEFAULT 'closed', action text NOT NULL DEFAULT '', reason text NOT NULL DEFAULT '',
	last_error text NOT NULL DEFAULT '', owner text NOT NULL DEFAULT '', decision text NOT NULL DEFAULT '',
	trips integer NOT NULL DEFAULT 0, updated timestamptz NOT NULL DEFAULT now());`

// workerTables are the tables version 1 makes.
var workerTables = []string{"tenax_breakers", "tenax_budget_holds", "tenax_budgets", "tenax_checkins",
	"tenax_finals", "tenax_inputs", "tenax_limits", "tenax_queues", "tenax_routes", "tenax_workers"}

// allVersions are the versions this tenax knows, ascending.
func allVersions() []int {
	var vs []int
	for _, m := range migration.All() {
		vs = append(vs, m.Version)
	}
	return vs
}

// newSchema returns a pool on a schema of its own holding the store's
// tables (tenax_jobs, which the workers' tables refer to), and nothing
// of the workers'.
func newSchema(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), pgtest.DSN(t, "tenax_mtest_"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := postgres.New(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

// exec runs sql on pool, failing the test on an error.
func exec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	// Not t.Context: cleanups run after it is canceled.
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
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

// tablesOf returns the workers' tables the schema has.
func tablesOf(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	return column(t, pool, `SELECT table_name::text FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_name LIKE 'tenax%'
		AND table_name NOT IN ('tenax_jobs', 'tenax_records', 'tenax_notes', 'tenax_migration', 'tenax_store_migration')
		AND table_name NOT LIKE 'tenax\_cache%'
		ORDER BY 1`)
}

// shape describes the workers' tables of the schema: every column with
// its type, nullability and default, every constraint, and the triggers
// on tenax_jobs, for two schemas to be compared.
func shape(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	return column(t, pool, `
	SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
		FROM information_schema.columns WHERE table_schema = current_schema()
		AND table_name LIKE 'tenax%' AND table_name NOT IN ('tenax_migration', 'tenax_store_migration')
	UNION ALL
	SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
		FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
	UNION ALL
	SELECT 'trigger ' || tgname || ' ' || tgfoid::regproc::text FROM pg_trigger
		WHERE tgrelid = 'tenax_jobs'::regclass AND NOT tgisinternal
	ORDER BY 1`)
}

// TestUpFromEmptyMakesTheTablesOnce: an empty schema gets every version
// and every table; a second Up finds nothing to do.
func TestUpFromEmptyMakesTheTablesOnce(t *testing.T) {
	pool := newSchema(t)
	res, err := migration.Up(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	if want := allVersions(); !slices.Equal(res.Versions, want) || res.Adopted {
		t.Errorf("Up on an empty schema: applied %v (adopted %v), want %v", res.Versions, res.Adopted, want)
	}
	if got := tablesOf(t, pool); !slices.Equal(got, workerTables) {
		t.Errorf("tables after Up: %v, want %v", got, workerTables)
	}
	res, err = migration.Up(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Versions) > 0 || res.Adopted {
		t.Errorf("second Up: applied %v (adopted %v), want nothing", res.Versions, res.Adopted)
	}
	st, err := migration.Read(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Versions) != migration.Latest() || st.Versions[0].Applied.IsZero() || st.Unversioned {
		t.Errorf("status after Up: %+v, want %d versions applied", st, migration.Latest())
	}
}

// TestDownToZeroAndUpAgain: Down to 0 drops the workers' tables and
// keeps the store's; Up makes them again.
func TestDownToZeroAndUpAgain(t *testing.T) {
	pool := newSchema(t)
	if _, err := migration.Up(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	exec(t, pool, `INSERT INTO tenax_jobs (id, created, updated, manifest) VALUES ('j', now(), now(), '{}')`)
	res, err := migration.Down(t.Context(), pool, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := allVersions()
	slices.Reverse(want)
	if !slices.Equal(res.Versions, want) {
		t.Errorf("Down to 0 undid %v, want %v (newest first)", res.Versions, want)
	}
	if got := tablesOf(t, pool); len(got) > 0 {
		t.Errorf("tables left after Down to 0: %v", got)
	}
	// The job's row stays, and deleting it finds no trigger left over.
	exec(t, pool, `DELETE FROM tenax_jobs WHERE id = 'j'`)
	st, err := migration.Read(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range st.Versions {
		if !v.Applied.IsZero() {
			t.Errorf("version %d still recorded after Down to 0", v.Version)
		}
	}
	if res, err = migration.Up(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	if got := tablesOf(t, pool); !slices.Equal(got, workerTables) || !slices.Equal(res.Versions, allVersions()) {
		t.Errorf("Up after Down to 0: applied %v, tables %v, want %v and %v", res.Versions, got, allVersions(), workerTables)
	}
}

// TestUpFromTwoWorkersAtOnceAppliesOnce: two processes migrating one
// schema at once (two workers starting) both succeed, and the version is
// applied by one of them.
func TestUpFromTwoWorkersAtOnceAppliesOnce(t *testing.T) {
	pool := newSchema(t)
	const racers = 2
	var wg sync.WaitGroup
	results := make([]migration.Result, racers)
	errs := make([]error, racers)
	for i := range racers {
		// Connections of their own, as two processes have.
		conn, err := pgx.Connect(t.Context(), pool.Config().ConnString())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		wg.Go(func() { results[i], errs[i] = migration.Up(t.Context(), conn) })
	}
	wg.Wait()
	var applied []int
	for i := range racers {
		if errs[i] != nil {
			t.Errorf("racer %d: %v", i, errs[i])
		}
		applied = append(applied, results[i].Versions...)
	}
	slices.Sort(applied)
	if !slices.Equal(applied, allVersions()) {
		t.Errorf("two Ups at once applied %v between them, want each of %v once", applied, allVersions())
	}
	if got := tablesOf(t, pool); !slices.Equal(got, workerTables) {
		t.Errorf("tables: %v, want %v", got, workerTables)
	}
}

// TestUpAdoptsTheTablesOfATenaxBeforeVersions: a schema made by a tenax
// from before the numbered versions (tables there, no tenax_migration)
// is adopted as version 1, its rows kept, and ends as a fresh schema's
// version 1 does, whichever earlier tenax made it.
func TestUpAdoptsTheTablesOfATenaxBeforeVersions(t *testing.T) {
	fresh := newSchema(t)
	if _, err := migration.Up(t.Context(), fresh); err != nil {
		t.Fatal(err)
	}
	want := shape(t, fresh)
	for _, tc := range []struct{ name, sql string }{
		{"the last unversioned tenax", legacySQL},
		{"the first tenax with workers", firstShippedSQL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := newSchema(t)
			exec(t, pool, tc.sql)
			exec(t, pool, `INSERT INTO tenax_jobs (id, created, updated, manifest) VALUES ('j', now(), now(), '{}')`)
			exec(t, pool, `INSERT INTO tenax_queues (job_id, queue, spec_path, spec_source, format) VALUES ('j', 'j', 's.yaml', 'x', 'jsonl')`)
			st, err := migration.Read(t.Context(), pool)
			if err != nil {
				t.Fatal(err)
			}
			if !st.Unversioned {
				t.Errorf("status before adoption: %+v, want unversioned", st)
			}
			res, err := migration.Up(t.Context(), pool)
			if err != nil {
				t.Fatalf("Up on the tables of an earlier tenax: %v", err)
			}
			if !res.Adopted || len(res.Versions) != migration.Latest()-1 {
				t.Errorf("Up: adopted %v, applied %v, want adopted and versions 2…%d applied", res.Adopted, res.Versions, migration.Latest())
			}
			if got := column(t, pool, `SELECT job_id FROM tenax_queues`); !slices.Equal(got, []string{"j"}) {
				t.Errorf("tenax_queues after adoption: %v, want the job's row kept", got)
			}
			if got := shape(t, pool); !slices.Equal(got, want) {
				t.Errorf("adopted schema differs from a migrated one:\n%s", diff(got, want))
			}
			if st, err = migration.Read(t.Context(), pool); err != nil {
				t.Fatal(err)
			}
			if st.Unversioned || !st.Versions[0].Adopted || st.Versions[0].Applied.IsZero() {
				t.Errorf("status after adoption: %+v, want version 1 recorded as adopted", st)
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

// TestDownRefusesWhatItCannotUndo: a target outside the known versions,
// or a version recorded by a newer tenax, is refused and nothing undone.
func TestDownRefusesWhatItCannotUndo(t *testing.T) {
	pool := newSchema(t)
	if _, err := migration.Up(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		setup string
		to    int
		want  string
	}{
		{"below zero", "", -1, "no version -1"},
		{"above the latest", "", migration.Latest() + 1, "this tenax knows 0 to"},
		{"a newer tenax's version", `INSERT INTO tenax_migration (version, name) VALUES (99, 'future')`, 0, "applied by a newer tenax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != "" {
				exec(t, pool, tc.setup)
				t.Cleanup(func() { exec(t, pool, `DELETE FROM tenax_migration WHERE version = 99`) })
			}
			_, err := migration.Down(t.Context(), pool, tc.to)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Down to %d: %v, want an error saying %q", tc.to, err, tc.want)
			}
			if got := tablesOf(t, pool); !slices.Equal(got, workerTables) {
				t.Errorf("tables after a refused Down: %v, want all kept", got)
			}
		})
	}
}
