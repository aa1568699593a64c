package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker/workertype"
)

// Store keeps jobs in PostgreSQL: tenax_jobs holds each job's manifest and
// tenax_records every appended record, in the schema the connection's
// search_path names. It is safe for concurrent use, by many processes.
type Store struct {
	pool *pgxpool.Pool
}

var _ store.Store = (*Store)(nil)

// Open connects to the database dsn names (a postgres:// URL or a
// "key=value" string, as pgx accepts) and brings the tables up to date
// (Migrate). Close releases the connections.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s, err := New(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// ParseConfig reads dsn as Open and the workers' client connect with it:
// pgx's reading, far stricter than store.ParseLocation's (an unknown
// sslmode, a port that is not a number, a missing certificate file). Its
// error is the address's fault, not the database's, so a caller given the
// address by a user refuses it as their input before anything connects.
// The error shows the address with its password hidden.
func ParseConfig(dsn string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: malformed database address: %w", err)
	}
	return cfg, nil
}

// New returns a Store on a pool the caller owns (workers share one pool
// between the store and River, so that a record and a River job's
// completion commit in one transaction), bringing the tables up to date
// (Migrate).
// Store.Close closes the pool.
func New(ctx context.Context, pool *pgxpool.Pool) (*Store, error) {
	s := &Store{pool: pool}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Pool returns the store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// SearchPathSchema returns the first schema the pool's search_path names
// (the DSN's search_path=NAME), "" when it names none or only $user:
// where tenax creates its tables.
func SearchPathSchema(pool *pgxpool.Pool) string {
	path := pool.Config().ConnConfig.RuntimeParams["search_path"]
	first := strings.Trim(strings.TrimSpace(strings.Split(path, ",")[0]), `"`)
	if first == "$user" {
		return ""
	}
	return first
}

// migrate brings the store's tables up to date (Migrate). The pool
// connects lazily: this is the store's first connection, and its failure
// is the database out of reach, not tables that could not be made (which
// is what it was reported as).
func (s *Store) migrate(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", s, err)
	}
	conn.Release()
	if _, err := Migrate(ctx, s.pool); err != nil {
		return err
	}
	return nil
}

// String names the database, for messages: "PostgreSQL db at host:port",
// with the schema when the connection sets a search_path. It never shows
// a password.
func (s *Store) String() string {
	c := s.pool.Config().ConnConfig
	name := fmt.Sprintf("PostgreSQL %s at %s:%d", c.Database, c.Host, c.Port)
	if sp := c.RuntimeParams["search_path"]; sp != "" {
		name += " (schema " + sp + ")"
	}
	return name
}

// WorkersHolding tells, for a job run by workers, whether any worker ever
// took it up (ran: a row of tenax_workers names it) and whether a live one
// holds it now (alive, by workertype.AliveSQL, the rule package worker
// judges its workers by). A database where no worker ever ran has neither.
func (s *Store) WorkersHolding(ctx context.Context, id string) (ran, alive bool, err error) {
	var table *string
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass('tenax_workers')::text`).Scan(&table); err != nil {
		return false, false, fmt.Errorf("postgres: %w", err)
	}
	if table == nil {
		return false, false, nil
	}
	err = s.pool.QueryRow(ctx, `SELECT COALESCE(bool_or(true), false), COALESCE(bool_or(`+workertype.AliveSQL+`), false)
		FROM tenax_workers w WHERE $1 = ANY(w.jobs)`, id).Scan(&ran, &alive)
	if err != nil {
		return false, false, fmt.Errorf("postgres: the workers of job %s: %w", id, err)
	}
	return ran, alive, nil
}

// Close closes the store's connections. Jobs opened from it stop working.
func (s *Store) Close() { s.pool.Close() }

// Create inserts the job. An empty m.ID becomes "job_YYYYMMDD_HHMMSS" of
// m.Created in the time zone it carries, with "_2", "_3", … on collision;
// a zero m.Created becomes now.
func (s *Store) Create(ctx context.Context, m store.Manifest) (store.Job, error) {
	if m.Created.IsZero() {
		m.Created = time.Now()
	}
	m.Updated = time.Now()
	explicit := m.ID != ""
	base := "job_" + m.Created.Format("20060102_150405")
	for n := 1; ; n++ {
		if !explicit {
			m.ID = base
			if n > 1 {
				m.ID += "_" + strconv.Itoa(n)
			}
		}
		b, err := json.Marshal(&m)
		if err != nil {
			return nil, fmt.Errorf("postgres: encoding manifest: %w", err)
		}
		tag, err := s.pool.Exec(ctx,
			`INSERT INTO tenax_jobs (id, created, updated, manifest) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING`,
			m.ID, m.Created, m.Updated, string(b))
		if err != nil {
			return nil, fmt.Errorf("postgres: creating job %s: %w", m.ID, err)
		}
		if tag.RowsAffected() == 1 {
			return &Job{pool: s.pool, manifest: m}, nil
		}
		if explicit {
			return nil, fmt.Errorf("postgres: job %s: %w", m.ID, store.ErrExists)
		}
	}
}

// Open returns the job for writing. Postgres jobs take no lock: many
// workers may append to one job (leases that divide its items among them
// are a later step), so Open never returns store.ErrInUse.
func (s *Store) Open(ctx context.Context, id string) (store.Job, error) {
	return s.open(ctx, id, false)
}

// OpenReadOnly returns the job for reading; its writing methods return
// store.ErrReadOnly.
func (s *Store) OpenReadOnly(ctx context.Context, id string) (store.Job, error) {
	return s.open(ctx, id, true)
}

func (s *Store) open(ctx context.Context, id string, readOnly bool) (*Job, error) {
	var b []byte
	err := s.pool.QueryRow(ctx, `SELECT manifest FROM tenax_jobs WHERE id = $1`, id).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: job %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: opening job %s: %w", id, err)
	}
	j := &Job{pool: s.pool, readOnly: readOnly}
	if err := json.Unmarshal(b, &j.manifest); err != nil {
		return nil, fmt.Errorf("postgres: manifest of job %s: %w", id, err)
	}
	return j, nil
}

// List returns every job's manifest, oldest first.
func (s *Store) List(ctx context.Context) ([]store.Manifest, error) {
	rows, err := s.pool.Query(ctx, `SELECT manifest FROM tenax_jobs ORDER BY created, id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: listing jobs: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Manifest, error) {
		var b []byte
		var m store.Manifest
		if err := row.Scan(&b); err != nil {
			return m, err
		}
		return m, json.Unmarshal(b, &m)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: listing jobs: %w", err)
	}
	return list, nil
}

// Job is one job's rows. Every Append is committed before it returns, so
// Flush has nothing left to do. Its methods are safe for concurrent use.
type Job struct {
	pool     *pgxpool.Pool
	readOnly bool

	mu       sync.Mutex
	manifest store.Manifest
	closed   bool
}

var (
	_ store.Job        = (*Job)(nil)
	_ store.NoteKeeper = (*Job)(nil)
)

// AppendNote inserts note into tenax_notes, committed before it returns.
func (j *Job) AppendNote(ctx context.Context, kind string, note []byte) error {
	id, err := j.check(true)
	if err != nil {
		return err
	}
	if _, err := j.pool.Exec(ctx, `INSERT INTO tenax_notes (job_id, kind, note) VALUES ($1, $2, $3)`, id, kind, note); err != nil {
		return fmt.Errorf("postgres: a %s note of job %s: %w", kind, id, err)
	}
	return nil
}

// Notes reads the job's notes of kind in the order they were appended.
func (j *Job) Notes(ctx context.Context, kind string) ([][]byte, error) {
	id, err := j.check(false)
	if err != nil {
		return nil, err
	}
	rows, err := j.pool.Query(ctx, `SELECT note FROM tenax_notes WHERE job_id = $1 AND kind = $2 ORDER BY seq`, id, kind)
	if err != nil {
		return nil, fmt.Errorf("postgres: the %s notes of job %s: %w", kind, id, err)
	}
	var (
		out  [][]byte
		note []byte
	)
	if _, err := pgx.ForEachRow(rows, []any{&note}, func() error {
		out = append(out, append([]byte(nil), note...))
		return nil
	}); err != nil {
		return nil, fmt.Errorf("postgres: the %s notes of job %s: %w", kind, id, err)
	}
	return out, nil
}

func (j *Job) check(write bool) (id string, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.closed:
		return "", store.ErrClosed
	case write && j.readOnly:
		return "", store.ErrReadOnly
	}
	return j.manifest.ID, nil
}

// Manifest returns the job's manifest as this Job last saved or read it.
func (j *Job) Manifest() store.Manifest {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.manifest
}

// SetState saves s as the job's state.
func (j *Job) SetState(ctx context.Context, s store.State) error {
	return j.UpdateManifest(ctx, func(m *store.Manifest) { m.State = s })
}

// UpdateManifest applies fn to the stored manifest in a transaction that
// locks the job's row, so updates by several workers do not overwrite each
// other.
func (j *Job) UpdateManifest(ctx context.Context, fn func(*store.Manifest)) error {
	id, err := j.check(true)
	if err != nil {
		return err
	}
	var m store.Manifest
	err = pgx.BeginFunc(ctx, j.pool, func(tx pgx.Tx) error {
		var b []byte
		if err := tx.QueryRow(ctx, `SELECT manifest FROM tenax_jobs WHERE id = $1 FOR UPDATE`, id).Scan(&b); err != nil {
			return err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		created := m.Created
		fn(&m)
		m.ID, m.Created, m.Updated = id, created, time.Now()
		if b, err = json.Marshal(&m); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE tenax_jobs SET manifest = $2, updated = $3 WHERE id = $1`, id, string(b), m.Updated)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: updating the manifest of job %s: %w", id, err)
	}
	j.mu.Lock()
	j.manifest = m
	j.mu.Unlock()
	return nil
}

// Append inserts recs in one statement, committed before it returns. A
// batch holding a record that cannot be encoded is refused whole. Records
// are json, not jsonb: kept as written (key order, "\u0000" in an output),
// so an export reads the same from either store.
func (j *Job) Append(ctx context.Context, recs ...store.Record) error {
	return j.AppendTx(ctx, j.pool, recs...)
}

// Execer is what AppendTx writes through: a pgx.Tx, a connection or a
// pool.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// AppendTx is Append inside the caller's transaction tx: the records are
// committed with whatever else tx writes, or not at all.
func (j *Job) AppendTx(ctx context.Context, tx Execer, recs ...store.Record) error {
	id, err := j.check(true)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return nil
	}
	idxs := make([]int64, len(recs))
	failed := make([]bool, len(recs))
	docs := make([]string, len(recs))
	for i := range recs {
		enc, err := Encode(recs[i])
		if err != nil {
			return err
		}
		idxs[i], failed[i], docs[i] = enc.Idx, enc.Failed, enc.Doc
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO tenax_records (job_id, idx, failed, record)
		SELECT $1, r.idx, r.failed, r.record
		FROM unnest($2::bigint[], $3::boolean[], $4::json[]) WITH ORDINALITY AS r(idx, failed, record, n)
		ORDER BY r.n`, id, idxs, failed, docs)
	if err != nil {
		return fmt.Errorf("postgres: appending %d records to job %s: %w", len(recs), id, err)
	}
	return nil
}

// Encoded is a record as tenax_records holds it: its idx, whether it
// failed, and its JSON text. Package worker writes the records of a group
// of items in the statement that completes their River jobs; encoding
// each here keeps the table's format the store's, and lets each record be
// encoded by the goroutine that made it, so that one that cannot be
// encoded fails alone instead of failing its group.
type Encoded struct {
	Idx    int64
	Failed bool
	Doc    string
}

// Encode encodes rec as tenax_records holds it.
func Encode(rec store.Record) (Encoded, error) {
	b, err := rec.AppendJSON(nil)
	if err != nil {
		return Encoded{}, fmt.Errorf("postgres: %w", err)
	}
	return Encoded{Idx: int64(rec.Idx), Failed: rec.Failed(), Doc: string(b)}, nil
}

// Flush returns at once: every Append is already committed.
func (j *Job) Flush(context.Context) error {
	_, err := j.check(true)
	return err
}

// latest selects the latest record of every idx, in idx order.
const latest = `SELECT DISTINCT ON (idx) idx, failed%s FROM tenax_records WHERE job_id = $1 ORDER BY idx, seq DESC`

// Outcomes reads the latest outcome of every idx from the index, never
// the records.
func (j *Job) Outcomes(ctx context.Context) (store.Outcomes, error) {
	id, err := j.check(false)
	if err != nil {
		return nil, err
	}
	rows, err := j.pool.Query(ctx, fmt.Sprintf(latest, ""), id)
	if err != nil {
		return nil, fmt.Errorf("postgres: outcomes of job %s: %w", id, err)
	}
	defer rows.Close()
	var (
		o      store.Outcomes
		idx    int64
		failed bool
	)
	_, err = pgx.ForEachRow(rows, []any{&idx, &failed}, func() error {
		out := store.Succeeded
		if failed {
			out = store.Failed
		}
		o.Set(int(idx), out)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: outcomes of job %s: %w", id, err)
	}
	return o, nil
}

// Scan calls fn with the latest record of every idx, in idx order, as the
// database streams them.
func (j *Job) Scan(ctx context.Context, fn func(store.Record) error) error {
	return j.scan(ctx, false, fn)
}

// Failures calls fn with the latest record of every idx whose latest
// record failed, in idx order.
func (j *Job) Failures(ctx context.Context, fn func(store.Record) error) error {
	return j.scan(ctx, true, fn)
}

// History calls fn with every record of idx, in the order they were
// appended.
func (j *Job) History(ctx context.Context, idx int, fn func(store.Record) error) error {
	return j.records(ctx, fmt.Sprintf("idx %d", idx), `SELECT record FROM tenax_records WHERE job_id = $1 AND idx = $2 ORDER BY seq`, fn, idx)
}

// Log calls fn with every record of the job, in the order they were
// appended, as the database streams them.
func (j *Job) Log(ctx context.Context, fn func(store.Record) error) error {
	return j.records(ctx, "every idx", `SELECT record FROM tenax_records WHERE job_id = $1 ORDER BY seq`, fn)
}

// records streams the records query selects (its first argument the
// job's id, then args) to fn; what names them in errors.
func (j *Job) records(ctx context.Context, what, query string, fn func(store.Record) error, args ...any) error {
	id, err := j.check(false)
	if err != nil {
		return err
	}
	rows, err := j.pool.Query(ctx, query, append([]any{id}, args...)...)
	if err != nil {
		return fmt.Errorf("postgres: reading the records of %s of job %s: %w", what, id, err)
	}
	defer rows.Close()
	var doc []byte
	_, err = pgx.ForEachRow(rows, []any{&doc}, func() error {
		var r store.Record
		if err := json.Unmarshal(doc, &r); err != nil {
			return fmt.Errorf("a record of %s: %w", what, err)
		}
		if err := fn(r); err != nil {
			return errStop{err}
		}
		return nil
	})
	var stop errStop
	if errors.As(err, &stop) {
		return stop.err
	}
	if err != nil {
		return fmt.Errorf("postgres: reading the records of %s of job %s: %w", what, id, err)
	}
	return nil
}

// errStop carries fn's error out of pgx.ForEachRow unwrapped.
type errStop struct{ err error }

func (e errStop) Error() string { return e.err.Error() }

func (j *Job) scan(ctx context.Context, onlyFailed bool, fn func(store.Record) error) error {
	id, err := j.check(false)
	if err != nil {
		return err
	}
	query := fmt.Sprintf(latest, ", record")
	if onlyFailed {
		query = `SELECT idx, failed, record FROM (` + query + `) latest WHERE failed ORDER BY idx`
	}
	rows, err := j.pool.Query(ctx, query, id)
	if err != nil {
		return fmt.Errorf("postgres: reading job %s: %w", id, err)
	}
	defer rows.Close()
	var (
		idx    int64
		failed bool
		doc    []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&idx, &failed, &doc}, func() error {
		var r store.Record
		if err := json.Unmarshal(doc, &r); err != nil {
			return fmt.Errorf("record of idx %d: %w", idx, err)
		}
		if err := fn(r); err != nil {
			return errStop{err}
		}
		return nil
	})
	var stop errStop
	if errors.As(err, &stop) {
		return stop.err
	}
	if err != nil {
		return fmt.Errorf("postgres: reading job %s: %w", id, err)
	}
	return nil
}

// Finish checks the job is writable and returns: the failures are a query
// (Failures), not a file to write.
func (j *Job) Finish(context.Context) error {
	_, err := j.check(true)
	return err
}

// Close marks the job closed; the connections belong to the Store.
func (j *Job) Close() error {
	j.mu.Lock()
	j.closed = true
	j.mu.Unlock()
	return nil
}
