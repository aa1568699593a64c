package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
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

// newCacheCmd is tenax cache: stats, clear, prune and copy of the response cache.
func newCacheCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache stats|clear|prune|copy",
		Short: "Inspect, prune, clear or copy the LLM response cache",
		Long: `The response cache keeps every LLM answer a job paid for, so that a rerun or a resume
answers a repeated request without calling the provider again. A job in a directory
store keeps it in one log (<home>/cache/entries.log unless a spec sets cache.dir); a
job in a PostgreSQL store, and every worker, in the table tenax_cache of the store's
database, shared by every machine on it: --store postgres://… (or TENAX_STORE) works
on that one. Either is bounded by cache.max_bytes (1 GiB by default): past it the
oldest entries are dropped on their own. These commands work on it while jobs run;
copy moves a local cache's answers into a PostgreSQL store's.`,
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
	cmd.AddCommand(newCacheStatsCmd(g, open), newCacheClearCmd(g, open), newCachePruneCmd(g, open), newCacheCopyCmd(g, &dir))
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

// copyProgressEvery is how often a long copy prints where it is.
const copyProgressEvery = 2 * time.Second

func newCacheCopyCmd(g *globals, dir *string) *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "copy [--from DIR] --store postgres://…",
		Short: "Copy a local cache into a PostgreSQL store's cache, so workers are served its answers",
		Long: `Copies every answer of a cache on this machine into the cache in a PostgreSQL store's
database (the table tenax_cache), where every worker and every run with that --store
finds it: what a job paid for before it moved to PostgreSQL is not paid again.

--from is a cache directory (what cache.dir names) or a home whose cache/ is one (default
<home>/cache, or --dir). Both layouts are read: the log (entries.log) and the older
one-file-per-entry layout, which is first moved into the log as any run on that directory
would do. Keys and the times entries were put are kept (prune --older-than and eviction
go on judging them by age); rejected entries are copied with their reasons, and the same
answer cached in the database is dropped with them.

Nothing newer is overwritten: an entry the database holds as put later, or rejected since,
is left alone. A copy run twice copies nothing the second time, and one interrupted can
be run again. Jobs may run on either cache meanwhile. A long copy prints its progress on
stderr every few seconds; the last line is "copied N, skipped M" (skipped: the database
had them as new or newer).`,
		Example: `  tenax cache copy --store "$TENAX_STORE"
  tenax cache copy --from /old/project/.tenax --store 'postgres://tenax@db:5432/tenax?search_path=batch'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src := from
			if src == "" {
				src = *dir
			}
			if src == "" {
				src = filepath.Join(g.homeDir(), "cache")
			}
			return copyCache(cmd.Context(), g, src)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the cache directory, or the home holding it in cache/, to copy from (default <home>/cache)")
	return cmd
}

// copyCache copies the cache in from, a cache directory or a home, into
// the PostgreSQL store's.
func copyCache(ctx context.Context, g *globals, from string) error {
	loc, err := g.storeLocation()
	if err != nil {
		return err
	}
	if loc.PostgresURL == "" {
		return usageErr(fmt.Errorf("tenax cache copy copies into a PostgreSQL store's cache: pass --store postgres://… (or set TENAX_STORE)"))
	}
	dir, err := copySource(from)
	if err != nil {
		return err
	}
	src, err := cache.Open(dir, cache.Options{})
	if err != nil {
		return &exitError{code: exitcode.Storage, err: err}
	}
	defer src.Close()
	total, err := src.Stats()
	if err != nil {
		return &exitError{code: exitcode.Storage, err: err}
	}
	admin, err := openSharedCache(ctx, loc)
	if err != nil {
		return err
	}
	dst := admin.(sharedCache)
	last := time.Now()
	progress := func(c pgcache.Copied) {
		if g.quiet || time.Since(last) < copyProgressEvery {
			return
		}
		last = time.Now()
		fmt.Fprintf(g.stderr, "cache copy: %d of %d entries read, copied %d, skipped %d\n", c.Entries+c.Rejected, total.Entries+total.Rejected, c.Copied(), c.Skipped())
	}
	done, err := dst.c.CopyFrom(ctx, src, progress)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = printCopied(g.stderr, done, dir) // what was copied stays copied
		return &exitError{code: exitcode.Storage, err: err}
	}
	return printCopied(g.stdout, done, dir)
}

// printCopied writes the summary line of a copy.
func printCopied(w io.Writer, c pgcache.Copied, dir string) error {
	_, err := fmt.Fprintf(w, "copied %d, skipped %d (of %d entries and %d rejected ones in %s; skipped: the database had them as new or newer)\n",
		c.Copied(), c.Skipped(), c.Entries, c.Rejected, dir)
	return err
}

// copySource returns the cache directory from names: itself when it holds
// a cache, else its cache/ when that does (from is a home). A path that
// holds neither is a usage error: a mistyped --from copies nothing
// without saying so otherwise.
func copySource(from string) (string, error) {
	if _, err := os.Stat(from); err != nil {
		return "", usageErr(fmt.Errorf("--from %s: %w", from, err))
	}
	for _, dir := range []string{from, filepath.Join(from, "cache")} {
		ok, err := cache.Exists(dir)
		if err != nil {
			return "", &exitError{code: exitcode.Storage, err: err}
		}
		if ok {
			return dir, nil
		}
	}
	return "", usageErr(fmt.Errorf("--from %s holds no cache (no %s, and no cache/ holding one): name a cache directory or a tenax home", from, cache.LogName))
}
