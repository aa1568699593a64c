// Package postgres keeps tenax jobs in PostgreSQL, for runs whose
// checkpoint should outlive one machine's disk or be read from elsewhere.
//
// Open connects and brings its tables up to date, in the schema the
// connection's search_path names (add search_path=… to the DSN to keep
// tenax apart):
//
//	tenax_jobs     id, created, updated, manifest jsonb
//	tenax_records  seq bigserial, job_id, idx, failed, record json
//	tenax_notes    seq bigserial, job_id, kind, note bytea
//
// The tables change by numbered migrations (Migrations, the files of
// migration/, run by package schema's migrator), their versions recorded
// in tenax_store_migration; a schema made by a tenax from before them is
// adopted as version 1, its rows kept.
//
// Records are only ever inserted; the latest of an idx is the one with the
// highest seq, found through the index on (job_id, idx, seq DESC), which
// also carries failed so Outcomes never reads a record. Each Append is one
// INSERT committed before it returns, so Flush has nothing to do and
// Finish writes no file: failures are a query (Job.Failures).
//
// The store passes the same conformance suite as store/jsonl. Records are
// stored as json (the text as written), not jsonb, which would reorder keys
// and refuse a string holding U+0000 that an exec task's output may carry.
//
// Many workers appending to one job is package worker's: items are River
// jobs in the same database, and a worker appends the records of a group
// of items, each encoded by Encode, in the transaction that completes
// their River jobs. Open takes no lock for that reason.
//
// Its tests need a database: TENAX_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable go test ./store/postgres
// Each test works in a schema of its own, dropped at the end.
package postgres
