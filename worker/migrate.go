package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/postgres"
	"github.com/tenaxhq/tenax/store/postgres/schema"
	"github.com/tenaxhq/tenax/worker/migration"
)

// Migrated is what Migrate did to a schema.
type Migrated struct {
	// Schema is the schema migrated.
	Schema string
	// Store is what the store's numbered migrations did
	// (postgres.Migrations).
	Store schema.Result
	// River are River's migration versions applied, none when River's
	// tables were at its latest.
	River []int
	// Tenax is what the workers' numbered migrations did.
	Tenax migration.Result
}

// sessionLock is the advisory lock migrating processes take one at a
// time, for as long as a session: River's migrations cannot share one
// transaction.
const sessionLock = `hashtext('tenax_worker_schema')`

// Migrate creates, when absent, the schema that the pool's search_path
// names first, and brings it up to date: the store's tables (their own
// numbered migrations, postgres.Migrate), River's
// (rivermigrate, up to River's latest version) and the workers' (the
// numbered migrations of package migration, adopting the tables of a
// tenax from before them). Many processes may migrate at once: an
// advisory lock takes them one at a time.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (Migrated, error) {
	var m Migrated
	// River's migrations cannot share one transaction (a new enum value
	// is used by the next one), so a session lock, held on a connection
	// of its own, takes migrating processes one at a time.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		// pgx's "failed to connect to `user=… database=…`: host…"
		// says it all.
		return m, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+sessionLock+`)`); err != nil {
		return m, fmt.Errorf("migrating: taking the migration lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(`+sessionLock+`)`)
	}()
	if first := postgres.SearchPathSchema(pool); first != "" {
		if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{first}.Sanitize()); err != nil {
			return m, fmt.Errorf("worker: creating schema %s: %w", first, err)
		}
	}
	if m.Schema, err = currentSchema(ctx, conn); err != nil {
		return m, err
	}
	// The store's tables first: the workers' refer to tenax_jobs.
	if m.Store, err = postgres.Migrate(ctx, pool); err != nil {
		return m, err
	}
	migrator, err := riverMigrator(pool, m.Schema)
	if err != nil {
		return m, err
	}
	res, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return m, fmt.Errorf("worker: migrating schema %s: river tables: %w", m.Schema, err)
	}
	for _, v := range res.Versions {
		m.River = append(m.River, v.Version)
	}
	if m.Tenax, err = migration.Up(ctx, conn); err != nil {
		return m, fmt.Errorf("worker: migrating schema %s: %w", m.Schema, err)
	}
	return m, nil
}

// currentSchema returns the schema the connection's tables go to, an
// error when its search_path names none that exists.
func currentSchema(ctx context.Context, conn *pgxpool.Conn) (string, error) {
	var schema string
	if err := conn.QueryRow(ctx, "SELECT coalesce(current_schema(), '')").Scan(&schema); err != nil {
		return "", fmt.Errorf("worker: reading the current schema: %w", err)
	}
	if schema == "" {
		return "", errors.New("worker: no schema to migrate: the search_path names none that exists")
	}
	return schema, nil
}

// riverMigrator returns River's migrator of schema.
func riverMigrator(pool *pgxpool.Pool, schema string) (*rivermigrate.Migrator[pgx.Tx], error) {
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema, Logger: quietLogger(nil)})
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	return m, nil
}

// MigrateUp connects to dsn and migrates it (Migrate): tenax migrate up.
// A database that cannot be reached or migrated is a *store.OpenError,
// as Open's.
func MigrateUp(ctx context.Context, dsn string) (Migrated, error) {
	var m Migrated
	err := withPool(ctx, dsn, func(pool *pgxpool.Pool) (err error) {
		m, err = Migrate(ctx, pool)
		return err
	})
	var oe *store.OpenError
	if err != nil && !errors.As(err, &oe) {
		err = &store.OpenError{Location: store.Location{PostgresURL: dsn}, Err: err}
	}
	return m, err
}

// MigrateDown undoes the numbered migrations of line above version to
// in dsn's schema: tenax migrate down. The workers' line
// (migration.Down) at version 0 drops the workers' tables with every
// job's queue, inputs and shared state; the store's
// (postgres.Migrations) at 0 drops every job and its records, and
// refuses while the workers' tables, which refer to the jobs, are there.
// River's tables stay: River's own migrations undo River's.
func MigrateDown(ctx context.Context, dsn string, line Line, to int) (schema.Result, error) {
	var res schema.Result
	err := withPool(ctx, dsn, func(pool *pgxpool.Pool) error {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		// Under the session lock too: not while a worker starting
		// migrates up.
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+sessionLock+`)`); err != nil {
			return fmt.Errorf("migrating: taking the migration lock: %w", err)
		}
		defer func() {
			_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(`+sessionLock+`)`)
		}()
		if line == StoreLine {
			if res, err = postgres.Migrations().Down(ctx, conn, to); err != nil {
				return storeDownError(ctx, conn, to, err)
			}
			return nil
		}
		res, err = migration.Down(ctx, conn, to)
		return err
	})
	return res, err
}

// Line names a set of tenax's tables with numbered migrations of its own.
type Line string

const (
	// WorkersLine is the workers' coordination tables (package
	// migration), recorded in tenax_migration.
	WorkersLine Line = "workers"
	// StoreLine is the store's tables, tenax_jobs, tenax_records and
	// tenax_notes (postgres.Migrations), recorded in
	// tenax_store_migration.
	StoreLine Line = "store"
)

// storeDownError says why the store's tables could not go down to 0
// when the workers' tables, which refer to tenax_jobs, are still there.
func storeDownError(ctx context.Context, conn *pgxpool.Conn, to int, err error) error {
	if to > 0 {
		return err
	}
	st, rerr := migration.Read(ctx, conn)
	if rerr != nil || len(st.Versions) == 0 || st.Versions[0].Applied.IsZero() {
		return err
	}
	return fmt.Errorf("the workers' tables refer to tenax_jobs: take them down first (tenax migrate down --to 0): %w", err)
}

// MigrationStatus is where a schema stands: the store's versions,
// River's and the workers'.
type MigrationStatus struct {
	// Store is the store's numbered migrations.
	Store schema.Status
	// Tenax is the workers' numbered migrations.
	Tenax migration.Status
	// River are River's versions applied, ascending, and RiverLatest the
	// latest this tenax's River has.
	River       []int
	RiverLatest int
}

// ReadMigrations reads, changing nothing, where dsn's schema stands:
// tenax migrate status.
func ReadMigrations(ctx context.Context, dsn string) (MigrationStatus, error) {
	var st MigrationStatus
	err := withPool(ctx, dsn, func(pool *pgxpool.Pool) error {
		var err error
		if st.Store, err = postgres.Migrations().Read(ctx, pool); err != nil {
			return err
		}
		if st.Tenax, err = migration.Read(ctx, pool); err != nil {
			return err
		}
		if st.Tenax.Schema == "" {
			return errors.New("worker: the search_path names no schema that exists: nothing is migrated yet ('tenax migrate up' creates it)")
		}
		migrator, err := riverMigrator(pool, st.Tenax.Schema)
		if err != nil {
			return err
		}
		all := migrator.AllVersions()
		st.RiverLatest = all[len(all)-1].Version
		applied, err := migrator.ExistingVersions(ctx)
		if err != nil {
			return fmt.Errorf("worker: reading River's versions: %w", err)
		}
		for _, v := range applied {
			st.River = append(st.River, v.Version)
		}
		slices.Sort(st.River)
		return nil
	})
	return st, err
}

// withPool runs f on a pool connected to dsn, closed after. A database
// out of reach, or one f fails to connect to, is a *store.OpenError
// naming the store, its password hidden.
func withPool(ctx context.Context, dsn string, f func(*pgxpool.Pool) error) error {
	cfg, err := postgres.ParseConfig(dsn)
	if err != nil {
		return &store.OpenError{Location: store.Location{PostgresURL: dsn}, Err: err}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return &store.OpenError{Location: store.Location{PostgresURL: dsn}, Err: err}
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return &store.OpenError{Location: store.Location{PostgresURL: dsn}, Err: err}
	}
	return f(pool)
}
