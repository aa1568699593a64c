package schema

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Line is one set of tables and its numbered migrations.
type Line struct {
	// Name says whose tables these are, in messages: "the store's",
	// "the workers'".
	Name string
	// Table is the line's own table of the versions applied (a plain
	// lower-case name): one row per version, with when and whether it
	// was adopted. It is made when absent, and stays when every version
	// is undone. Its name is also the first key of the line's advisory
	// lock.
	Table string
	// Files holds the migrations, NNN_name.up.sql and NNN_name.down.sql.
	Files fs.FS
	// Unversioned are the tables of version 1 that a tenax from before
	// the numbered versions made: any one there, and no version
	// recorded, is a schema to adopt (an early tenax made only some).
	Unversioned []string
	// Adopt is the SQL that brings whatever shape such a tenax left up
	// to version 1's: the statements it ran at start, frozen.
	Adopt string
}

// Migration is one numbered change to a line's tables: the SQL that
// makes it and the SQL that undoes it.
type Migration struct {
	// Version numbers the migrations from 1 up, without a gap.
	Version int
	// Name is what the change is, from its file's name
	// (001_coordination.up.sql: "coordination").
	Name string
	// Up makes the change; Down undoes it.
	Up, Down string
}

// All returns the line's migrations, by version.
func (l Line) All() []Migration {
	ms, err := parse(l.Files)
	if err != nil {
		// The files are compiled in: a malformed set is a build that
		// each line's test of its files refuses.
		panic(fmt.Sprintf("%s migrations: %v", l.Name, err))
	}
	return ms
}

// Latest returns the highest version the line has.
func (l Line) Latest() int { return len(l.All()) }

// parse reads the migrations of fsys: every NNN_name.up.sql with its
// NNN_name.down.sql, numbered 1, 2, … without a gap.
func parse(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "[0-9]*.sql")
	if err != nil {
		return nil, err
	}
	byVersion := map[int]*Migration{}
	for _, name := range names {
		version, rest, ok := strings.Cut(name, "_")
		n, err := strconv.Atoi(version)
		if !ok || err != nil || n < 1 {
			return nil, fmt.Errorf("migration: %s: want NNN_name.up.sql or NNN_name.down.sql", name)
		}
		base, direction, ok := strings.Cut(rest, ".")
		m := byVersion[n]
		if m == nil {
			m = &Migration{Version: n, Name: strings.ReplaceAll(base, "_", " ")}
			byVersion[n] = m
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		switch {
		case !ok || m.Name != strings.ReplaceAll(base, "_", " "):
			return nil, fmt.Errorf("migration: %s: its name differs from version %d's other file", name, n)
		case direction == "up.sql":
			m.Up = string(data)
		case direction == "down.sql":
			m.Down = string(data)
		default:
			return nil, fmt.Errorf("migration: %s: want NNN_name.up.sql or NNN_name.down.sql", name)
		}
	}
	ms := make([]Migration, 0, len(byVersion))
	for n := 1; n <= len(byVersion); n++ {
		m := byVersion[n]
		if m == nil {
			return nil, fmt.Errorf("migration: version %d is missing: the versions must run 1, 2, … without a gap", n)
		}
		if m.Up == "" || m.Down == "" {
			return nil, fmt.Errorf("migration: version %d (%s) needs both an up and a down file", n, m.Name)
		}
		ms = append(ms, *m)
	}
	return ms, nil
}

// DB is where migrations run: a *pgxpool.Pool, a *pgxpool.Conn, a
// *pgx.Conn or a pgx.Tx (a savepoint), its search_path naming the
// schema first.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Result is what Up or Down did.
type Result struct {
	// Schema is the schema migrated.
	Schema string
	// Versions are the versions applied (Up, ascending) or undone (Down,
	// descending); none when the schema was there already.
	Versions []int
	// Adopted says the schema predated the numbered versions and was
	// recorded as version 1 (which Versions then does not list).
	Adopted bool
}

// Up applies, in one transaction, every migration the schema has not
// recorded, adopting first a schema from before the versions were
// numbered. Versions a newer tenax recorded are left as they are.
func (l Line) Up(ctx context.Context, db DB) (Result, error) {
	return l.inLock(ctx, db, func(ctx context.Context, tx pgx.Tx, res *Result, applied []int) error {
		for _, m := range l.All() {
			if slices.Contains(applied, m.Version) {
				continue
			}
			if err := run(ctx, tx, m, "up"); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+l.Table+` (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return fmt.Errorf("migration: recording version %d: %w", m.Version, err)
			}
			res.Versions = append(res.Versions, m.Version)
		}
		return nil
	})
}

// Down undoes, in one transaction and newest first, every recorded
// migration above version to: Down(ctx, db, 0) drops the line's tables
// and what they hold. It refuses a version this tenax does not know, or
// to undo one a newer tenax recorded (that tenax's down knows how).
func (l Line) Down(ctx context.Context, db DB, to int) (Result, error) {
	all := l.All()
	if to < 0 || to > len(all) {
		return Result{}, fmt.Errorf("migration: no version %d of %s tables to go down to: this tenax knows 0 to %d", to, l.Name, len(all))
	}
	return l.inLock(ctx, db, func(ctx context.Context, tx pgx.Tx, res *Result, applied []int) error {
		slices.Reverse(applied)
		for _, v := range applied {
			if v <= to {
				break
			}
			if v > len(all) {
				return fmt.Errorf("migration: version %d of %s tables was applied by a newer tenax, which this one cannot undo: run that tenax's migrate down", v, l.Name)
			}
			if err := run(ctx, tx, all[v-1], "down"); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM `+l.Table+` WHERE version = $1`, v); err != nil {
				return fmt.Errorf("migration: forgetting version %d: %w", v, err)
			}
			res.Versions = append(res.Versions, v)
		}
		return nil
	})
}

// run executes m's SQL in direction ("up" or "down") in tx.
func run(ctx context.Context, tx pgx.Tx, m Migration, direction string) error {
	sql := m.Up
	if direction == "down" {
		sql = m.Down
	}
	if _, err := tx.Exec(ctx, sql); err != nil {
		return fmt.Errorf("migration: version %03d (%s) %s: %w", m.Version, m.Name, direction, err)
	}
	return nil
}

// versionTable is the DDL of the line's table of versions.
func (l Line) versionTable() string {
	return `
CREATE TABLE ` + l.Table + ` (
	version integer PRIMARY KEY,
	name    text NOT NULL,
	applied timestamptz NOT NULL DEFAULT now(),
	adopted boolean NOT NULL DEFAULT false
)`
}

// inLock runs step in a transaction that holds the line's migration
// lock of the schema, after making the line's table of versions when
// absent and adopting a schema from before the versions were numbered,
// with the versions recorded, ascending; it commits when step succeeds.
func (l Line) inLock(ctx context.Context, db DB, step func(context.Context, pgx.Tx, *Result, []int) error) (Result, error) {
	var res Result
	tx, err := db.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("migration: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := tx.QueryRow(ctx, `SELECT coalesce(current_schema(), '')`).Scan(&res.Schema); err != nil {
		return res, fmt.Errorf("migration: reading the current schema: %w", err)
	}
	if res.Schema == "" {
		return res, errors.New("migration: no schema to migrate: the search_path names none that exists")
	}
	// Taken before the table of versions is looked for: two processes
	// making it at once would collide on its type's name.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))`, l.Table, res.Schema); err != nil {
		return res, fmt.Errorf("migration: taking the migration lock of schema %s: %w", res.Schema, err)
	}
	applied, adopted, err := l.prepare(ctx, tx)
	if err != nil {
		return res, fmt.Errorf("migration: schema %s: %w", res.Schema, err)
	}
	res.Adopted = adopted
	if err := step(ctx, tx, &res, applied); err != nil {
		return res, err
	}
	if err := tx.Commit(ctx); err != nil {
		return res, fmt.Errorf("migration: committing schema %s: %w", res.Schema, err)
	}
	return res, nil
}

// prepare makes the line's table of versions when absent and adopts a
// schema from before the versions were numbered (no version recorded, a
// table of the line there), returning the versions recorded, ascending,
// and whether it adopted the schema.
func (l Line) prepare(ctx context.Context, tx pgx.Tx) (applied []int, adopted bool, err error) {
	hasTable, legacy, err := l.lookForTables(ctx, tx)
	if err != nil {
		return nil, false, err
	}
	if !hasTable {
		if _, err := tx.Exec(ctx, l.versionTable()); err != nil {
			return nil, false, fmt.Errorf("creating %s: %w", l.Table, err)
		}
	}
	rows, err := tx.Query(ctx, `SELECT version FROM `+l.Table+` ORDER BY version`)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", l.Table, err)
	}
	if applied, err = pgx.CollectRows(rows, pgx.RowTo[int]); err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", l.Table, err)
	}
	if len(applied) > 0 || !legacy {
		return applied, false, nil
	}
	if err := l.adopt(ctx, tx); err != nil {
		return nil, false, err
	}
	return []int{1}, true, nil
}

// lookForTables says whether the current schema, which exists, has the
// line's table of versions, and whether it has any of the line's tables
// from before the versions.
func (l Line) lookForTables(ctx context.Context, tx pgx.Tx) (versioned, unversioned bool, err error) {
	if err := tx.QueryRow(ctx, `SELECT
		to_regclass(format('%I.%I', current_schema(), $2::text)) IS NOT NULL,
		EXISTS (SELECT 1 FROM pg_class WHERE relnamespace = current_schema()::regnamespace
			AND relkind IN ('r', 'p') AND relname = ANY ($1))`, l.Unversioned, l.Table).Scan(&versioned, &unversioned); err != nil {
		return false, false, fmt.Errorf("looking for %s: %w", l.Table, err)
	}
	return versioned, unversioned, nil
}

// adopt brings a schema from before the versions were numbered to
// version 1 and records it so.
func (l Line) adopt(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, l.Adopt); err != nil {
		return fmt.Errorf("adopting %s tables of an earlier tenax as version 1: %w", l.Name, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+l.Table+` (version, name, adopted) VALUES (1, $1, true)`, l.All()[0].Name); err != nil {
		return fmt.Errorf("recording the adopted version 1: %w", err)
	}
	return nil
}

// Version is one version as a schema has it.
type Version struct {
	// Version and Name are the migration's.
	Version int
	Name    string
	// Applied is when it was applied, zero while pending.
	Applied time.Time
	// Adopted says the schema predated the numbered versions and was
	// recorded as this version without running it.
	Adopted bool
	// Unknown says a newer tenax applied it: this one has no such file.
	Unknown bool
}

// Status is where a schema stands on one line.
type Status struct {
	// Schema is the schema read.
	Schema string
	// Versions are every version this tenax knows and every version the
	// schema recorded, ascending.
	Versions []Version
	// Unversioned says the schema has tables of a tenax from before
	// the versions were numbered, and no version: the next Up adopts it.
	Unversioned bool
}

// Read returns where the schema stands, changing nothing.
func (l Line) Read(ctx context.Context, db DB) (Status, error) {
	var st Status
	tx, err := db.Begin(ctx)
	if err != nil {
		return st, fmt.Errorf("migration: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := tx.QueryRow(ctx, `SELECT coalesce(current_schema(), '')`).Scan(&st.Schema); err != nil {
		return st, fmt.Errorf("migration: reading the current schema: %w", err)
	}
	if st.Schema == "" {
		// The search_path names no schema that exists: nothing applied.
		st.Versions = merge(l.All(), nil)
		return st, nil
	}
	hasTable, legacy, err := l.lookForTables(ctx, tx)
	if err != nil {
		return st, err
	}
	recorded := map[int]Version{}
	if hasTable {
		rows, err := tx.Query(ctx, `SELECT version, name, applied, adopted FROM `+l.Table+` ORDER BY version`)
		if err != nil {
			return st, fmt.Errorf("migration: reading %s: %w", l.Table, err)
		}
		var v Version
		if _, err := pgx.ForEachRow(rows, []any{&v.Version, &v.Name, &v.Applied, &v.Adopted}, func() error {
			recorded[v.Version] = v
			return nil
		}); err != nil {
			return st, fmt.Errorf("migration: reading %s: %w", l.Table, err)
		}
	}
	st.Unversioned = legacy && len(recorded) == 0
	st.Versions = merge(l.All(), recorded)
	return st, nil
}

// merge lists the known migrations, as recorded where they are, then
// the recorded versions this tenax does not know.
func merge(all []Migration, recorded map[int]Version) []Version {
	var vs []Version
	for _, m := range all {
		v, ok := recorded[m.Version]
		if !ok {
			v = Version{Version: m.Version, Name: m.Name}
		}
		vs = append(vs, v)
		delete(recorded, m.Version)
	}
	for _, v := range recorded {
		v.Unknown = true
		vs = append(vs, v)
	}
	slices.SortFunc(vs, func(a, b Version) int { return a.Version - b.Version })
	return vs
}
