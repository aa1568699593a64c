package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenaxhq/tenax/store/postgres/schema"
)

// migrations are the store's numbered migrations, and adopt.sql.
//
//go:embed migration/*.sql
var migrations embed.FS

// adoptSQL holds the statements that adopt the store's tables of a tenax
// from before its migrations were numbered as version 1.
//
//go:embed migration/adopt.sql
var adoptSQL string

// Migrations returns the store's tables (tenax_jobs, tenax_records,
// tenax_notes) as a line of numbered migrations, its versions recorded in
// tenax_store_migration: Open and New migrate it up, tenax migrate shows
// it and can take it down.
func Migrations() schema.Line {
	files, err := fs.Sub(migrations, "migration")
	if err != nil {
		// A constant directory of the embedded files.
		panic(err)
	}
	return schema.Line{
		Name:        "the store's",
		Table:       "tenax_store_migration",
		Files:       files,
		Unversioned: []string{"tenax_jobs", "tenax_records", "tenax_notes"},
		Adopt:       adoptSQL,
	}
}

// Migrate creates the schema the pool's search_path names first when it
// is missing, and brings the store's tables in it up to date
// (Migrations), adopting those of a tenax from before the numbered
// migrations. Many processes may migrate at once: advisory locks take
// them one at a time.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (schema.Result, error) {
	var res schema.Result
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// CREATE SCHEMA IF NOT EXISTS run by two processes at once can
		// still collide.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('tenax_schema'))`); err != nil {
			return err
		}
		if name := SearchPathSchema(pool); name != "" {
			if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
				return fmt.Errorf("creating schema %s: %w", name, err)
			}
		}
		var err error
		res, err = Migrations().Up(ctx, tx)
		return err
	})
	if err != nil {
		return res, fmt.Errorf("postgres: migrating the store's tables: %w", err)
	}
	return res, nil
}
