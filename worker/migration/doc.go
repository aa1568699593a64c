// Package migration numbers the changes to the tables tenax's workers
// coordinate through (tenax_queues, tenax_finals, tenax_workers,
// tenax_limits, tenax_breakers, tenax_budgets, tenax_budget_holds,
// tenax_checkins, tenax_inputs, tenax_routes), as River's rivermigrate
// numbers River's own: version N is the pair of files NNN_name.up.sql
// and NNN_name.down.sql embedded in the binary, and the table
// tenax_migration records which versions a schema has.
//
// Up applies every version not yet recorded, and Down undoes the
// recorded ones above a target, each call in one transaction under an
// advisory lock of the schema: workers starting at once migrate one
// after the other, and a migration that fails leaves the schema as it
// was. River's migrations cannot share a transaction (one adds an enum
// value the next uses), so River's run apart, through rivermigrate
// (worker.Migrate runs both).
//
// A schema made by a tenax from before the versions were numbered has
// some or all of the tables and no version recorded: Up (and Down) adopts it as version
// 1, bringing the shape any earlier tenax left up to version 1's with
// the statements that tenax ran at start (adopt.sql), and records the
// version as adopted. Nothing is dropped or rewritten on the way.
package migration
