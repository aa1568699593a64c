package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/store"
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
		return store.Location{Dir: g.homeDir()}, nil
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
	return loc, nil
}

// openStore opens the store the flags and the environment name.
func (g *globals) openStore(ctx context.Context) (store.Store, func(), error) {
	loc, err := g.storeLocation()
	if err != nil {
		return nil, nil, err
	}
	return job.OpenStore(ctx, loc)
}
