// Package schema numbers the changes to a set of tenax's PostgreSQL
// tables, as River's rivermigrate numbers River's own: a Line is one such
// set, its version N the pair of files NNN_name.up.sql and
// NNN_name.down.sql embedded in the binary, and a table of its own (the
// Line's Table) records which versions a schema has. The store's tables
// (package store/postgres) are one line, the workers' coordination
// tables (package worker/migration) another, each with its own versions:
// the store is usable without workers, and neither waits on the other's
// numbering.
//
// Up applies every version not yet recorded, and Down undoes the
// recorded ones above a target, each call in one transaction under an
// advisory lock of the line and the schema: processes starting at once
// migrate one after the other, and a migration that fails leaves the
// schema as it was.
//
// A schema made by a tenax from before a line's versions were numbered
// has some or all of its tables (the Line's Unversioned) and no version
// recorded: Up (and Down) adopts it as version 1, bringing the shape any
// earlier tenax left up to version 1's with the statements that tenax ran
// at start (the Line's Adopt), and records the version as adopted.
// Nothing is dropped or rewritten on the way.
package schema
