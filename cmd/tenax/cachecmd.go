package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/tenaxhq/tenax/cache"
	"github.com/tenaxhq/tenax/exitcode"
)

// newCacheCmd is tenax cache: stats, clear and prune of the response cache.
func newCacheCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache stats|clear|prune",
		Short: "Inspect, prune or clear the LLM response cache",
		Long: `The response cache keeps every LLM answer a job paid for, in one log
(<home>/cache/entries.log unless a spec sets cache.dir), so that a rerun or a resume
answers a repeated request without calling the provider again. The log is bounded by
cache.max_bytes (1 GiB by default): past it the oldest entries are dropped on their own.
These commands work on it while jobs run: a job sees the change at its next write.`,
	}
	var dir string
	cmd.PersistentFlags().StringVar(&dir, "dir", "", "the cache directory (default <home>/cache)")
	open := func() (*cache.Cache, error) {
		d := dir
		if d == "" {
			d = filepath.Join(g.homeDir(), "cache")
		}
		c, err := cache.Open(d, cache.Options{})
		if err != nil {
			return nil, &exitError{code: exitcode.Storage, err: err}
		}
		return c, nil
	}
	cmd.AddCommand(newCacheStatsCmd(g, open), newCacheClearCmd(g, open), newCachePruneCmd(g, open))
	return cmd
}

// cacheOpener opens the cache the --dir and --home flags name.
type cacheOpener func() (*cache.Cache, error)

func newCacheStatsCmd(g *globals, open cacheOpener) *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Print the cache's entries, bytes and the times of its oldest and newest entry",
		Long: `Prints how many entries the cache holds, the bytes they take in its log and the
log's size (the difference is replaced and rejected records a compaction has not yet
dropped), the entries kept under rejected/ for analysis, and when the oldest and newest
entries were put. Hits are not counted here: a job's status says how many of its
items were served from the cache.`,
		Example: `  tenax cache stats
  tenax cache stats --dir /shared/tenax-cache`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := open()
			if err != nil {
				return err
			}
			defer c.Close()
			s, err := c.Stats()
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
			c, err := open()
			if err != nil {
				return err
			}
			defer c.Close()
			p, err := c.Clear()
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
		Long: `Rewrites the cache's log without the entries put longer ago than --older-than
(a Go duration: 720h is 30 days) and, with --max-bytes, without the oldest entries that
do not fit in N bytes of log. The newest entries are kept. Jobs running on the cache go
on: they see the new log at their next write. At least one of the two flags is needed
(exit 2 without).`,
		Example: `  tenax cache prune --max-bytes 100000000
  tenax cache prune --older-than 720h`,
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
			c, err := open()
			if err != nil {
				return err
			}
			defer c.Close()
			p, err := c.Prune(bound, cut)
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
