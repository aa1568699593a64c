package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tenaxhq/tenax/cache"
	pgcache "github.com/tenaxhq/tenax/cache/postgres"
	"github.com/tenaxhq/tenax/exitcode"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/postgres"
)

// newCacheCmd is tenax cache: stats, clear and prune of the response cache.
func newCacheCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache stats|clear|prune",
		Short: "Inspect, prune or clear the LLM response cache",
		Long: `The response cache keeps every LLM answer a job paid for, so that a rerun or a resume
answers a repeated request without calling the provider again. A job in a directory
store keeps it in one log (<home>/cache/entries.log unless a spec sets cache.dir); a
job in a PostgreSQL store, and every worker, in the table tenax_cache of the store's
database, shared by every machine on it: --store postgres://… (or TENAX_STORE) works
on that one. Either is bounded by cache.max_bytes (1 GiB by default): past it the
oldest entries are dropped on their own. These commands work on it while jobs run.`,
	}
	var dir string
	cmd.PersistentFlags().StringVar(&dir, "dir", "", "the cache directory (default <home>/cache); a file cache even with a PostgreSQL --store")
	open := func(ctx context.Context) (cacheAdmin, error) {
		if dir == "" {
			loc, err := g.storeLocation()
			if err != nil {
				return nil, err
			}
			if loc.PostgresURL != "" {
				return openSharedCache(ctx, loc)
			}
		}
		d := dir
		if d == "" {
			d = filepath.Join(g.homeDir(), "cache")
		}
		c, err := cache.Open(d, cache.Options{})
		if err != nil {
			return nil, &exitError{code: exitcode.Storage, err: err}
		}
		return fileCache{c}, nil
	}
	cmd.AddCommand(newCacheStatsCmd(g, open), newCacheClearCmd(g, open), newCachePruneCmd(g, open))
	for _, sub := range cmd.Commands() {
		addStoreFlag(sub, g)
	}
	return cmd
}

// cacheOpener opens the cache the --dir, --store and --home flags name.
type cacheOpener func(ctx context.Context) (cacheAdmin, error)

// cacheAdmin is what tenax cache does to a cache, in a directory or in
// PostgreSQL.
type cacheAdmin interface {
	stats(ctx context.Context) (interface{ WriteText(io.Writer) error }, error)
	prune(ctx context.Context, maxBytes int64, olderThan time.Time) (cache.Pruned, error)
	clear(ctx context.Context) (cache.Pruned, error)
	Close() error
}

// fileCache is the cache in a directory.
type fileCache struct{ c *cache.Cache }

func (f fileCache) stats(context.Context) (interface{ WriteText(io.Writer) error }, error) {
	return f.c.Stats()
}

func (f fileCache) prune(_ context.Context, maxBytes int64, olderThan time.Time) (cache.Pruned, error) {
	return f.c.Prune(maxBytes, olderThan)
}

func (f fileCache) clear(context.Context) (cache.Pruned, error) { return f.c.Clear() }
func (f fileCache) Close() error                                { return f.c.Close() }

// sharedCache is the cache in a PostgreSQL store's database, and the
// store it was opened through.
type sharedCache struct {
	c         *pgcache.Cache
	closeConn func()
}

// openSharedCache opens the cache in the database of loc, a PostgreSQL
// store (migrated up, as any command that opens it does). A database out
// of reach is a *store.OpenError, its password hidden.
func openSharedCache(ctx context.Context, loc store.Location) (cacheAdmin, error) {
	st, closeConn, err := job.OpenStore(ctx, loc)
	if err != nil {
		return nil, err
	}
	c, err := pgcache.Open(ctx, st.(*postgres.Store).Pool(), pgcache.Options{})
	if err != nil {
		closeConn()
		return nil, &exitError{code: exitcode.Storage, err: err}
	}
	return sharedCache{c: c, closeConn: closeConn}, nil
}

func (s sharedCache) stats(ctx context.Context) (interface{ WriteText(io.Writer) error }, error) {
	return s.c.Stats(ctx)
}

func (s sharedCache) prune(ctx context.Context, maxBytes int64, olderThan time.Time) (cache.Pruned, error) {
	return s.c.Prune(ctx, maxBytes, olderThan)
}

func (s sharedCache) clear(ctx context.Context) (cache.Pruned, error) { return s.c.Clear(ctx) }

func (s sharedCache) Close() error {
	err := s.c.Close()
	s.closeConn()
	return err
}

func newCacheStatsCmd(g *globals, open cacheOpener) *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Print the cache's entries, bytes and the times of its oldest and newest entry",
		Long: `Prints how many entries the cache holds, the bytes they take in its log and the
log's size (in PostgreSQL: what the table takes on disk) (the difference is replaced and rejected records a compaction has not yet
dropped), the entries kept under rejected/ for analysis, and when the oldest and newest
entries were put. Hits are not counted here: a job's status says how many of its
items were served from the cache.`,
		Example: `  tenax cache stats
  tenax cache stats --dir /shared/tenax-cache
  tenax cache stats --store "$TENAX_STORE"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			s, err := c.stats(cmd.Context())
			if err != nil {
				return err
			}
			return s.WriteText(g.stdout)
		},
	}
}

func newCacheClearCmd(g *globals, open cacheOpener) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "clear --yes",
		Short: "Remove every entry of the cache",
		Long: `Removes every entry of the cache, and the rejected entries kept for analysis: the
next run pays for every answer again. It asks no question (CI has no terminal to answer
one): without --yes it refuses, exit 2.`,
		Example: `  tenax cache clear --yes`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !yes {
				return usageErr(errors.New("tenax cache clear removes every cached answer: pass --yes to do it"))
			}
			c, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			p, err := c.clear(cmd.Context())
			if err != nil {
				return err
			}
			return p.WriteText(g.stdout)
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "remove every entry; refused without it")
	return cmd
}

func newCachePruneCmd(g *globals, open cacheOpener) *cobra.Command {
	var (
		maxBytes  int64
		olderThan time.Duration
	)
	cmd := &cobra.Command{
		Use:   "prune --max-bytes N | --older-than D",
		Short: "Drop the oldest entries: those over a size, or put longer ago than a duration",
		Long: `Rewrites the cache's log (in PostgreSQL: deletes the rows) without the entries put longer ago than --older-than
(a Go duration: 720h is 30 days) and, with --max-bytes, without the oldest entries that
do not fit in N bytes of log. The newest entries are kept. Jobs running on the cache go
on: they see the new log at their next write. At least one of the two flags is needed
(exit 2 without).`,
		Example: `  tenax cache prune --max-bytes 100000000
  tenax cache prune --older-than 720h --store 'postgres://tenax@db:5432/tenax?search_path=batch'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bound, cut := int64(-1), time.Time{}
			if cmd.Flags().Changed("max-bytes") {
				if maxBytes < 0 {
					return usageErr(fmt.Errorf("--max-bytes %d: must not be negative", maxBytes))
				}
				bound = maxBytes
			}
			if cmd.Flags().Changed("older-than") {
				if olderThan <= 0 {
					return usageErr(fmt.Errorf("--older-than %s: must be positive", olderThan))
				}
				cut = time.Now().Add(-olderThan)
			}
			if bound < 0 && cut.IsZero() {
				return usageErr(errors.New("tenax cache prune: pass --max-bytes N or --older-than D"))
			}
			c, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			p, err := c.prune(cmd.Context(), bound, cut)
			if err != nil {
				return err
			}
			return p.WriteText(g.stdout)
		},
	}
	cmd.Flags().Int64Var(&maxBytes, "max-bytes", 0, "keep the newest entries that fit in this many bytes of log")
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "drop the entries put longer ago than this (e.g. 720h)")
	return cmd
}
