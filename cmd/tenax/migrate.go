package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tenaxhq/tenax/store/postgres"
	"github.com/tenaxhq/tenax/store/postgres/schema"
	"github.com/tenaxhq/tenax/worker"
	"github.com/tenaxhq/tenax/worker/migration"
)

// migrateHelp is what tenax migrate does, shared by its subcommands.
const migrateHelp = `The --store database holds, in the schema its search_path names, three sets of
tables, each brought up to date by its own owner:

  the store's    tenax_jobs, tenax_records, tenax_notes, and the shared response
                 cache (tenax_cache, tenax_cache_rejected, tenax_cache_size):
                 numbered migrations, up and down, recorded in tenax_store_migration
  River's        river_job, river_queue, … (River's migrations, via rivermigrate)
  the workers'   tenax_queues, tenax_inputs, tenax_finals, tenax_workers,
                 tenax_limits, tenax_breakers, tenax_budgets, tenax_budget_holds,
                 tenax_checkins, tenax_routes: numbered migrations, up and down,
                 recorded in tenax_migration

'tenax worker', and every command that opens a PostgreSQL store, migrates up at
start, so nothing needs running by hand; 'tenax migrate up' does it beforehand, for
a deploy step that holds the DDL rights the workers need not have. Each migration
runs in one transaction under an advisory lock: workers starting at once are safe.
A schema made by a tenax from before the numbered migrations (the store's or the
workers') is adopted as version 1, its rows kept.`

func newMigrateCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or update River's and tenax's tables in the --store database",
		Long:  migrateHelp + "\n\nWithout a subcommand, migrate is 'migrate up'.",
		Example: `  tenax migrate --store 'postgres://tenax@db:5432/tenax?search_path=batch'
  tenax migrate status --store "$TENAX_STORE"
  tenax migrate down --to 0 --yes --store "$TENAX_STORE"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return migrateUp(cmd, g) },
	}
	up := &cobra.Command{
		Use:   "up",
		Short: "Bring the store's, River's and the workers' tables up to date (the default)",
		Long:  migrateHelp,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return migrateUp(cmd, g) },
	}
	addStoreFlag(cmd, g)
	addStoreFlag(up, g)
	cmd.AddCommand(up, newMigrateDownCmd(g), newMigrateStatusCmd(g))
	return cmd
}

// migrateUp is tenax migrate [up].
func migrateUp(cmd *cobra.Command, g *globals) error {
	url, err := migrateStore(g)
	if err != nil {
		return err
	}
	m, err := worker.MigrateUp(cmd.Context(), url)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "tenax: River's and tenax's tables are ready in schema %s\n", m.Schema)
	if len(m.River) > 0 {
		fmt.Fprintf(g.stdout, "  River: applied %s\n", versionList(m.River))
	}
	if m.Store.Adopted {
		fmt.Fprintln(g.stdout, "  store: adopted the tables of an earlier tenax as version 1")
	}
	if len(m.Store.Versions) > 0 {
		fmt.Fprintf(g.stdout, "  store: applied %s\n", versionList(m.Store.Versions))
	}
	fmt.Fprintf(g.stdout, "  store: at version %d\n", postgres.Migrations().Latest())
	if m.Tenax.Adopted {
		fmt.Fprintln(g.stdout, "  tenax: adopted the tables of an earlier tenax as version 1")
	}
	if len(m.Tenax.Versions) > 0 {
		fmt.Fprintf(g.stdout, "  tenax: applied %s\n", versionList(m.Tenax.Versions))
	}
	fmt.Fprintf(g.stdout, "  tenax: at version %d\n", migration.Latest())
	return nil
}

func newMigrateDownCmd(g *globals) *cobra.Command {
	var to int
	var yes bool
	var line string
	cmd := &cobra.Command{
		Use:   "down --to N --yes",
		Short: "Undo the workers' (or --line store, the store's) migrations above version N",
		Long: `Undo, newest first and in one transaction, the numbered migrations above version
--to of one line of tables: the workers' (the default) or, with --line store, the
store's. The workers' version 0 drops the workers' tables and what they hold: every
job's queue, inputs, finals, shared breaker, limits, budget and check-ins, and the
list of workers; the jobs and their records stay. The store's version 0 drops every
job and its records, and is refused while the workers' tables are there (they refer
to the jobs): take the workers' down first. River's tables stay; River's are
River's own to undo ('river migrate-down').

Stop every worker first: a worker that starts migrates up again. --yes is required,
as there is no question to answer without a terminal; without it the command
refuses (exit 2) and changes nothing.

` + migrateHelp,
		Example: `  tenax migrate status --store "$TENAX_STORE"
  tenax migrate down --to 0 --yes --store "$TENAX_STORE"
  tenax migrate down --line store --to 0 --yes --store "$TENAX_STORE"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return migrateDown(cmd, g, worker.Line(line), to, yes)
		},
	}
	cmd.Flags().IntVar(&to, "to", 0, "the version to go down to: 0 removes the line's tables")
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm: undoing drops tables and the rows in them")
	cmd.Flags().StringVar(&line, "line", string(worker.WorkersLine), "whose tables: workers or store")
	addStoreFlag(cmd, g)
	return cmd
}

// migrateDown is tenax migrate down.
func migrateDown(cmd *cobra.Command, g *globals, line worker.Line, to int, yes bool) error {
	latest, whose := migration.Latest(), "the workers'"
	switch line {
	case worker.WorkersLine:
	case worker.StoreLine:
		latest, whose = postgres.Migrations().Latest(), "the store's"
	default:
		return usageErr(fmt.Errorf("--line %q: want workers or store", line))
	}
	if !cmd.Flags().Changed("to") {
		return usageErr(fmt.Errorf("migrate down needs --to N, the version to go down to (0 removes %s tables); 'tenax migrate status' lists them", whose))
	}
	if to < 0 || to > latest {
		return usageErr(fmt.Errorf("--to %d: this tenax knows versions 0 to %d of %s tables", to, latest, whose))
	}
	if !yes {
		flags := storeArgument(g)
		if flags != "" {
			flags = " " + flags
		}
		if line == worker.StoreLine {
			flags = " --line store" + flags
		}
		return usageErr(fmt.Errorf("migrate down deletes %s tables above version %d and what they hold; to do so, run:\n  tenax migrate down --to %d --yes%s", whose, to, to, flags))
	}
	url, err := migrateStore(g)
	if err != nil {
		return err
	}
	res, err := worker.MigrateDown(cmd.Context(), url, line, to)
	if err != nil {
		return err
	}
	if len(res.Versions) == 0 {
		fmt.Fprintf(g.stdout, "tenax: schema %s has no version of %s tables above %d: nothing to undo\n", res.Schema, whose, to)
		return nil
	}
	fmt.Fprintf(g.stdout, "tenax: undid %s in schema %s: %s tables are at version %d\n", versionList(res.Versions), res.Schema, whose, to)
	return nil
}

func newMigrateStatusCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List the migrations the store's, River's and the workers' tables have, changing nothing",
		Long: `List each of the store's numbered migrations, River's migration version and each
of the workers' numbered migrations: applied (when, and whether adopted from a tenax from before the numbered
migrations) or pending. Nothing is changed.

` + migrateHelp,
		Example: `  tenax migrate status --store "$TENAX_STORE"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			url, err := migrateStore(g)
			if err != nil {
				return err
			}
			st, err := worker.ReadMigrations(cmd.Context(), url)
			if err != nil {
				return err
			}
			printMigrations(g.stdout, st)
			return nil
		},
	}
	addStoreFlag(cmd, g)
	return cmd
}

// migrateStore is the PostgreSQL URL the migrate commands work on.
func migrateStore(g *globals) (string, error) {
	if _, err := g.storeLocation(); err != nil {
		return "", err
	}
	url := g.postgresURL()
	if url == "" {
		return "", usageErr(errors.New("migrate needs a PostgreSQL store: pass --store postgres://… or set TENAX_STORE"))
	}
	return url, nil
}

// printMigrations writes tenax migrate status.
func printMigrations(w io.Writer, st worker.MigrationStatus) {
	fmt.Fprintf(w, "Schema: %s\n", st.Tenax.Schema)
	fmt.Fprintln(w, "store (the jobs and their records):")
	printLine(w, st.Store)
	river := "none applied"
	if n := len(st.River); n > 0 {
		river = "at version " + strconv.Itoa(st.River[n-1])
	}
	fmt.Fprintf(w, "River:  %s (latest %d)\n", river, st.RiverLatest)
	fmt.Fprintln(w, "tenax (the workers' tables):")
	printLine(w, st.Tenax)
}

// printLine writes the versions of one line of tables.
func printLine(w io.Writer, st schema.Status) {
	for _, v := range st.Versions {
		state := "pending"
		switch {
		case v.Applied.IsZero() && st.Unversioned && v.Version == 1:
			state = "pending: the tables of an earlier tenax are there, the next migrate up adopts them"
		case v.Applied.IsZero():
		case v.Adopted:
			state = "adopted " + v.Applied.UTC().Format(time.RFC3339) + " (made by an earlier tenax)"
		default:
			state = "applied " + v.Applied.UTC().Format(time.RFC3339)
		}
		if v.Unknown {
			state += " by a newer tenax"
		}
		fmt.Fprintf(w, "  %03d %-14s %s\n", v.Version, v.Name, state)
	}
}

// versionList is versions for a message: "versions 1, 2" or "version 1".
func versionList(versions []int) string {
	s := make([]string, len(versions))
	for i, v := range versions {
		s[i] = strconv.Itoa(v)
	}
	if len(s) == 1 {
		return "version " + s[0]
	}
	return "versions " + strings.Join(s, ", ")
}
