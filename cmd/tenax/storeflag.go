package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/store/postgres"
)

// addStoreFlag gives cmd the --store flag.
func addStoreFlag(cmd *cobra.Command, g *globals) {
	cmd.Flags().StringVar(&g.storeURL, "store", "",
		"where jobs live: a directory (jobs in DIR/jobs) or a postgres:// URL (default $TENAX_STORE, else the home)")
}

// storeLocation is --store, else $TENAX_STORE, else the home directory.
func (g *globals) storeLocation() (store.Location, error) {
	raw, from := g.storeURL, "--store"
	if raw == "" {
		raw, from = os.Getenv("TENAX_STORE"), "TENAX_STORE"
	}
	if raw == "" {
		from = "--home"
		if g.home == "" {
			from = "TENAX_HOME"
		}
		return store.Location{Dir: g.homeDir()}, notADirectory(from, g.homeDir())
	}
	loc, err := store.ParseLocation(raw)
	if err == nil && loc.PostgresURL != "" {
		// pgx reads more of the address than ParseLocation does (sslmode,
		// the port…); what it refuses is the user's input, refused here
		// for every command alike, not a database that failed (exit 4).
		_, err = postgres.ParseConfig(loc.PostgresURL)
	}
	if err != nil {
		return store.Location{}, usageErr(fmt.Errorf("%s: %w", from, err))
	}
	return loc, notADirectory(from, loc.Dir)
}

// notADirectory refuses, as a usage error, a store directory that is a
// file: `--store results.jsonl` failed with exit 1 and "mkdir …: not a
// directory" only once the job was being created.
func notADirectory(from, dir string) error {
	if fi, err := os.Stat(dir); dir == "" || err != nil || fi.IsDir() {
		return nil
	}
	return usageErr(fmt.Errorf("%s %s is a file: name a directory (tenax keeps the jobs in DIR/jobs) or a postgres:// URL", from, dir))
}

// openStore opens the store the flags and the environment name.
func (g *globals) openStore(ctx context.Context) (store.Store, func(), error) {
	loc, err := g.storeLocation()
	if err != nil {
		return nil, nil, err
	}
	return job.OpenStore(ctx, loc)
}

// openStoreTelling is openStore for a command that reads a whole job
// (status, export): a JSONL store says on stderr, every 5 s, how far a
// long read of the log and of its records is — on a terminal whatever
// --log-level (someone is waiting), elsewhere from --log-level info —
// unless --quiet. A status of a million records read for 15 s in silence.
func (g *globals) openStoreTelling(ctx context.Context) (store.Store, func(), error) {
	st, closeStore, err := g.openStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	if js, ok := st.(*jsonl.Store); ok && !g.quiet {
		most := slog.LevelError
		if g.stderrIsTerminal() {
			most = slog.LevelInfo
		}
		log, err := g.loggerOnAtLeast(g.stderr, most)
		if err != nil {
			closeStore()
			return nil, nil, err
		}
		js.Logger = log
	}
	return st, closeStore, nil
}
