package worker_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/internal/pgtest"
	"github.com/tenaxhq/tenax/worker"
)

// TestRecordsAndFinalsCheckNoForeignKeyAndGoWithTheirJob: every record
// and every tenax_finals row checked a foreign key to tenax_jobs, a row
// lock on the job per row and about a third of a group's write. A schema
// made by an earlier tenax (with the foreign keys) loses them when
// migrated, and deleting a job's row still deletes its records, finals
// and inputs, as ON DELETE CASCADE did (postgres.CascadeSQL).
func TestRecordsAndFinalsCheckNoForeignKeyAndGoWithTheirJob(t *testing.T) {
	dsn := pgtest.DSN(t, "tenax_wtest_")
	ctx := t.Context()
	conn := connect(t, dsn)
	// The tables as tenax made them before.
	if _, err := conn.Exec(ctx, `
CREATE TABLE tenax_jobs (id text PRIMARY KEY, created timestamptz NOT NULL,
	updated timestamptz NOT NULL, manifest jsonb NOT NULL);
CREATE TABLE tenax_records (seq bigserial PRIMARY KEY,
	job_id text NOT NULL REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	idx bigint NOT NULL, failed boolean NOT NULL, record json NOT NULL);
CREATE TABLE tenax_finals (job_id text NOT NULL REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	idx bigint NOT NULL, round integer NOT NULL, PRIMARY KEY (job_id, idx, round));`); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a second migration finds nothing to do
		c, err := worker.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	var fks []string
	rows, err := conn.Query(ctx, `SELECT conrelid::regclass || ' ' || conname FROM pg_constraint
		WHERE conrelid IN ('tenax_records'::regclass, 'tenax_finals'::regclass) AND contype = 'f'`)
	if err != nil {
		t.Fatal(err)
	}
	if fks, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if len(fks) > 0 {
		t.Errorf("foreign keys left after migrating: %v", fks)
	}

	for _, q := range []string{
		`INSERT INTO tenax_jobs VALUES ('a', now(), now(), '{}'), ('b', now(), now(), '{}')`,
		`INSERT INTO tenax_records (job_id, idx, failed, record) VALUES ('a', 0, false, '{}'), ('b', 0, false, '{}')`,
		`INSERT INTO tenax_finals VALUES ('a', 0, 1), ('b', 0, 1)`,
		`INSERT INTO tenax_inputs (job_id, idx) VALUES ('a', 0), ('b', 0)`,
		`DELETE FROM tenax_jobs WHERE id = 'a'`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, table := range []string{"tenax_records", "tenax_finals", "tenax_inputs"} {
		var left []string
		rows, err := conn.Query(ctx, `SELECT job_id FROM `+table+` ORDER BY job_id`)
		if err != nil {
			t.Fatal(err)
		}
		if left, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			t.Fatal(err)
		}
		if len(left) != 1 || left[0] != "b" {
			t.Errorf("%s after deleting job a: jobs %v, want [b]", table, left)
		}
	}
}
