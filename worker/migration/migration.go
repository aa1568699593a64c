package migration

import (
	"context"
	"embed"

	"github.com/tenaxhq/tenax/store/postgres/schema"
)

// files are the migrations, NNN_name.up.sql and NNN_name.down.sql, and
// adopt.sql.
//
//go:embed *.sql
var files embed.FS

// adoptSQL holds the statements that adopt a schema from before the
// versions were numbered as version 1.
//
//go:embed adopt.sql
var adoptSQL string

// line is the workers' tables as a line of numbered migrations, its
// versions recorded in tenax_migration.
var line = schema.Line{
	Name:  "the workers'",
	Table: "tenax_migration",
	Files: files,
	Unversioned: []string{"tenax_queues", "tenax_finals", "tenax_workers", "tenax_limits",
		"tenax_breakers", "tenax_budgets", "tenax_budget_holds", "tenax_checkins", "tenax_inputs", "tenax_routes"},
	Adopt: adoptSQL,
}

// Migration is one numbered change to the workers' tables: the SQL that
// makes it and the SQL that undoes it.
type Migration = schema.Migration

// DB is where migrations run: a *pgxpool.Pool, a *pgxpool.Conn or a
// *pgx.Conn, its search_path naming the schema first.
type DB = schema.DB

// Result is what Up or Down did.
type Result = schema.Result

// Version is one version as a schema has it.
type Version = schema.Version

// Status is where a schema stands.
type Status = schema.Status

// All returns the migrations this tenax knows, by version.
func All() []Migration { return line.All() }

// Latest returns the highest version this tenax knows.
func Latest() int { return line.Latest() }

// Up applies, in one transaction, every migration the schema has not
// recorded, adopting first a schema from before the versions were
// numbered. Versions a newer tenax recorded are left as they are.
func Up(ctx context.Context, db DB) (Result, error) { return line.Up(ctx, db) }

// Down undoes, in one transaction and newest first, every recorded
// migration above version to: Down(ctx, db, 0) drops the workers' tables
// and what they hold. It refuses a version this tenax does not know, or
// to undo one a newer tenax recorded (that tenax's down knows how).
func Down(ctx context.Context, db DB, to int) (Result, error) { return line.Down(ctx, db, to) }

// Read returns where the schema stands, changing nothing.
func Read(ctx context.Context, db DB) (Status, error) { return line.Read(ctx, db) }
