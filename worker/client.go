package worker

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/postgres"
)

// The workers' tables, beside the store's tenax_jobs and tenax_records
// and River's river_* tables, made and changed by the numbered
// migrations of package worker/migration:
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
//   - tenax_inputs: the items' inputs (inputs.go).
//   - tenax_routes: the breaker and cooldown of each route of a routed
//     job (routes.go).

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
	m, err := Migrate(ctx, pool)
	if err != nil {
		return nil, err
	}
	schema := m.Schema
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
