package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/postgres"
)

// tables are tenax's tables for workers, beside the store's tenax_jobs
// and tenax_records and River's river_* tables.
//
//   - tenax_queues: one row per job run by workers: its River queue, the
//     spec source workers build the task from, its current round, and
//     how many times it was resumed (a worker's run of the job built
//     before the latest resume stops: it may run a spec since edited).
//   - tenax_finals: one row per (job, idx, round) that has its final
//     record. The record and this row are inserted, and the item's River
//     job completed, in one transaction; a duplicate execution (a rescued
//     job whose first worker was alive after all) finds the row taken and
//     adds no record. Like tenax_records, it has no foreign key (one
//     checked per row was a third of a group's write); a trigger deletes
//     a job's rows with its tenax_jobs row.
//   - tenax_workers: every worker process, with its heartbeat.
//   - tenax_limits: the shared rate limiters' schedules (GCRA) and the
//     provider cooldown of each job.
//   - tenax_breakers: the shared circuit breaker of each job, and why an
//     operator stopped it otherwise (an abort at a check-in).
//   - tenax_budgets: the account of each job's budget (budget.go): what
//     its calls spent and hold, and why it stopped once reached.
//   - tenax_budget_holds: what each worker holds of a job's budget for
//     its calls under way, given back when the worker is gone.
//   - tenax_checkins: the count toward the next check-in of each job
//     whose spec sets checkin_every, while a terminal attends it
//     (checkin.go).
//   - tenax_inputs: the items' inputs (see inputsTable).
//   - tenax_routes: the breaker and cooldown of each route of a routed
//     job (see routesTable).
const tables = `
CREATE TABLE IF NOT EXISTS tenax_queues (
	job_id      text PRIMARY KEY REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	queue       text NOT NULL UNIQUE,
	spec_path   text NOT NULL,
	spec_source text NOT NULL,
	format      text NOT NULL,
	round       integer NOT NULL DEFAULT 1,
	created     timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS tenax_finals (
	job_id text NOT NULL,
	idx    bigint NOT NULL,
	round  integer NOT NULL,
	PRIMARY KEY (job_id, idx, round)
);
CREATE TABLE IF NOT EXISTS tenax_workers (
	id          text PRIMARY KEY,
	host        text NOT NULL,
	pid         integer NOT NULL,
	jobs        text[] NOT NULL DEFAULT '{}',
	concurrency integer NOT NULL,
	in_flight   integer NOT NULL DEFAULT 0,
	finished    bigint NOT NULL DEFAULT 0,
	started     timestamptz NOT NULL DEFAULT now(),
	heartbeat   timestamptz NOT NULL DEFAULT now(),
	stopped     timestamptz
);
CREATE TABLE IF NOT EXISTS tenax_limits (
	job_id text NOT NULL REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	name   text NOT NULL,
	tat    timestamptz NOT NULL,
	PRIMARY KEY (job_id, name)
);
CREATE TABLE IF NOT EXISTS tenax_breakers (
	job_id    text PRIMARY KEY REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	state     text NOT NULL DEFAULT 'closed',
	action    text NOT NULL DEFAULT '',
	reason    text NOT NULL DEFAULT '',
	last_error text NOT NULL DEFAULT '',
	owner     text NOT NULL DEFAULT '',
	decision  text NOT NULL DEFAULT '',
	trips     integer NOT NULL DEFAULT 0,
	updated   timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS tenax_budgets (
	job_id     text PRIMARY KEY REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	tokens     bigint NOT NULL DEFAULT 0,
	cost_micro bigint NOT NULL DEFAULT 0,
	held       bigint NOT NULL DEFAULT 0,
	granted    boolean NOT NULL DEFAULT false,
	reached    text NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS tenax_budget_holds (
	job_id    text NOT NULL REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	worker_id text NOT NULL,
	held      bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (job_id, worker_id)
);
CREATE TABLE IF NOT EXISTS tenax_checkins (
	job_id text PRIMARY KEY REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	every  bigint NOT NULL DEFAULT 0,
	done   bigint NOT NULL DEFAULT 0,
	next   bigint NOT NULL DEFAULT 0,
	due    boolean NOT NULL DEFAULT false
);
-- The question an operator is asked (on_trip: prompt), rendered by the
-- worker that tripped, and who answered it: added after the table first
-- shipped, hence ALTER, only when missing (an ALTER takes the table's
-- exclusive lock even when it has nothing to do, and every worker that
-- starts migrates).
DO $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'tenax_breakers' AND column_name = 'decided_by') THEN
		ALTER TABLE tenax_breakers
			ADD COLUMN IF NOT EXISTS summary    text NOT NULL DEFAULT '',
			ADD COLUMN IF NOT EXISTS failures   text[] NOT NULL DEFAULT '{}',
			ADD COLUMN IF NOT EXISTS decided_by text NOT NULL DEFAULT '';
	END IF;
	-- When a terminal last attended the job (an attached tenax run): a
	-- trip with on_trip unset asks it, as one process on a terminal does.
	IF NOT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'tenax_breakers' AND column_name = 'attended') THEN
		ALTER TABLE tenax_breakers ADD COLUMN IF NOT EXISTS attended timestamptz;
	END IF;
	-- Why an operator stopped the job outside its breaker (an abort at a
	-- check-in): every worker stops it; a resume clears it.
	IF NOT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'tenax_breakers' AND column_name = 'stopped') THEN
		ALTER TABLE tenax_breakers ADD COLUMN IF NOT EXISTS stopped text NOT NULL DEFAULT '';
	END IF;
	-- How many times the job was resumed (Client.Requeue).
	IF NOT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'tenax_queues' AND column_name = 'resumes') THEN
		ALTER TABLE tenax_queues ADD COLUMN IF NOT EXISTS resumes integer NOT NULL DEFAULT 0;
	END IF;
	-- How many items one River job of the job holds (GroupItems), for
	-- a resume's. Jobs enqueued before it held one.
	IF NOT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'tenax_queues' AND column_name = 'group_items') THEN
		ALTER TABLE tenax_queues ADD COLUMN IF NOT EXISTS group_items integer NOT NULL DEFAULT 1;
	END IF;
	-- A worker's --rescue-after: without a heartbeat for that long it is
	-- lost (workerAlive). Rows of older workers keep the default's minute.
	IF NOT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'tenax_workers' AND column_name = 'rescue_after') THEN
		ALTER TABLE tenax_workers ADD COLUMN IF NOT EXISTS rescue_after interval NOT NULL DEFAULT '1 minute';
	END IF;
END $$;
`

// Client is tenax on River in one PostgreSQL database: the job store, a
// River client for inserting items, and the workers' tables, all in the
// schema the DSN's search_path names.
type Client struct {
	pool   *pgxpool.Pool
	store  *postgres.Store
	schema string
	river  *river.Client[pgx.Tx]
	// appName is the application_name of the connections Open makes,
	// nil for a pool the caller made (New) or whose DSN names one.
	appName *atomic.Pointer[string]
}

// defaultAppName is the application_name of a Client's connections until
// a worker names them.
const defaultAppName = "tenax"

// nameConnections makes the client's connections carry name as their
// application_name (pg_stat_activity), the ones open now included: an
// operator tells a worker's connections apart, and can end them. Clients
// made by New, or whose DSN sets application_name, keep theirs. A client
// shared by several workers carries the latest one's name.
func (c *Client) nameConnections(name string) {
	if c.appName == nil {
		return
	}
	c.appName.Store(&name)
	// Connections open now were made under the old name: closed when
	// idle, or when released, and made again under the new one.
	c.pool.Reset()
}

// Open connects to dsn and migrates (Migrate): River's tables and tenax's
// are created on first use. Close releases the connections. A database
// that cannot be reached or migrated is a *store.OpenError, which names
// the store (the operator knows a database, not this package).
func Open(ctx context.Context, dsn string) (*Client, error) {
	c, err := open(ctx, dsn)
	if err != nil {
		return nil, &store.OpenError{Location: store.Location{PostgresURL: dsn}, Err: err}
	}
	return c, nil
}

func open(ctx context.Context, dsn string) (*Client, error) {
	cfg, err := postgres.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		// River holds connections of its own (LISTEN, the producer's
		// fetches, the completer) beside the records' transactions.
		cfg.MaxConns = max(cfg.MaxConns, 12)
	}
	var appName *atomic.Pointer[string]
	if _, set := cfg.ConnConfig.RuntimeParams["application_name"]; !set {
		appName = new(atomic.Pointer[string])
		name := defaultAppName
		appName.Store(&name)
		cfg.BeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
			cc.RuntimeParams["application_name"] = *appName.Load()
			return nil
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c, err := New(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	c.appName = appName
	return c, nil
}

// New returns a Client on a pool the caller made, migrating first.
// Client.Close closes the pool.
func New(ctx context.Context, pool *pgxpool.Pool) (*Client, error) {
	schema, err := Migrate(ctx, pool)
	if err != nil {
		return nil, err
	}
	st, err := postgres.New(ctx, pool)
	if err != nil {
		return nil, err
	}
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:  schema,
		Workers: itemWorkers(nil),
		Logger:  quietLogger(nil),
	})
	if err != nil {
		return nil, fmt.Errorf("worker: river client: %w", err)
	}
	return &Client{pool: pool, store: st, schema: schema, river: rc}, nil
}

// Store returns the job store the workers write to.
func (c *Client) Store() store.Store { return c.store }

// Schema returns the schema holding the tables.
func (c *Client) Schema() string { return c.schema }

// Close closes the connections.
func (c *Client) Close() { c.pool.Close() }

// Migrate creates, when absent, the schema that the pool's search_path
// names first, River's tables (rivermigrate, up to the latest version)
// and tenax's: the store's and the workers'. It returns the schema. Many
// processes may migrate at once: an advisory lock takes them one at a
// time.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	// River's migrations cannot share one transaction (a new enum value
	// is used by the next one), so a session lock, held on a connection
	// of its own, takes migrating processes one at a time.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		// pgx's "failed to connect to `user=… database=…`: host…"
		// says it all.
		return "", err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext('tenax_worker_schema'))`); err != nil {
		return "", fmt.Errorf("migrating: taking the migration lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext('tenax_worker_schema'))`)
	}()
	if first := postgres.SearchPathSchema(pool); first != "" {
		if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{first}.Sanitize()); err != nil {
			return "", fmt.Errorf("worker: creating schema %s: %w", first, err)
		}
	}
	var schema string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return "", fmt.Errorf("worker: reading the current schema: %w", err)
	}
	if schema == "" {
		return "", errors.New("worker: no schema to create tables in: the search_path names none that exists")
	}
	if _, err := postgres.New(ctx, pool); err != nil {
		return "", err
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema, Logger: quietLogger(nil)})
	if err != nil {
		return "", fmt.Errorf("worker: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return "", fmt.Errorf("worker: migrating schema %s: river tables: %w", schema, err)
	}
	if _, err := conn.Exec(ctx, tables+postgres.CascadeSQL("tenax_finals")+inputsTable+postgres.CascadeSQL("tenax_inputs")+routesTable); err != nil {
		return "", fmt.Errorf("worker: migrating schema %s: %w", schema, err)
	}
	return schema, nil
}

// queueName is the River queue of a job: its id, lower-cased, with what
// River does not allow in a queue name replaced by '_'.
func queueName(jobID string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(jobID) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	q := b.String()
	if len(q) > 64 {
		q = q[:64]
	}
	return q
}
