package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tenaxhq/tenax/fix"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/report"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/store"
)

func newStatusCmd(g *globals) *cobra.Command {
	var top int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [JOB|latest|NAME]",
		Short: "Show a job's outcomes, error groups, attempts, time, tokens and cost (default: the latest job)",
		Long: `Show a job's outcomes by class, its failures grouped by error fingerprint (the
message with numbers, ids and paths normalized), how many calls items took, its
time, rate, tokens and cost. Without JOB, the latest job; 'tenax status --all'
lists every job. JOB is a job id, 'latest', or a job's name (its latest run);
a fix run's id (fix_…) shows that run's errors by status.

A job whose manifest says running but whose process is gone (killed with -9,
a machine that stopped) is shown as stale: 'tenax resume JOB' continues it.

A job with routes shows each route's items, tokens, cost, the items that left
it, and what its breaker counted over the job's runs: '| breaker: N fault(s),
M refused' (kept as each run, or each worker's run, ends; docs/routes.md).

A big job's status takes a while (about 15 s for a million records): every 5 s
it says on stderr how far its read is, on a terminal always, elsewhere with
--log-level info; --quiet for none.

--json prints the same as one JSON object for scripts, every error group
included (tenax.status/v1; with --all, tenax.jobs/v1): docs/records.md has
the shape. For a fix run it is tenax.fix.status/v1 (docs/fix.md). tenax status --json | jq .outcomes.succeeded`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(args) == 1 && fix.IsID(args[0]) {
				return fixStatus(g, args[0], cmd.OutOrStdout(), asJSON)
			}
			st, closeStore, err := g.openStoreTelling(ctx)
			if err != nil {
				return err
			}
			defer closeStore()
			if all, _ := cmd.Flags().GetBool("all"); all {
				return listJobs(ctx, g, st, asJSON)
			}
			j, err := openJob(ctx, st, args)
			if err != nil {
				return err
			}
			defer j.Close()
			r, err := report.BuildReport(ctx, j, job.BatchWaves)
			if err != nil {
				return err
			}
			r.Manifest.State, r.Note = report.CurrentState(ctx, st, r.Manifest, job.LocationFlags(g.homeDir(), g.storeURL))
			if asJSON {
				s := r.JSON()
				if err := workersJSON(ctx, g, r.Manifest.ID, &s); err != nil {
					return err
				}
				return writeJSON(cmd.OutOrStdout(), s)
			}
			if err := r.WriteText(cmd.OutOrStdout(), top); err != nil {
				return err
			}
			return workersStatus(ctx, g, r.Manifest.ID)
		},
	}
	addStoreFlag(cmd, g)
	cmd.Flags().IntVar(&top, "top", 10, "how many error groups to show")
	cmd.Flags().Bool("all", false, "list every job instead")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object for scripts (docs/records.md)")
	return cmd
}

func listJobs(ctx context.Context, g *globals, st store.Store, asJSON bool) error {
	ms, err := st.List(ctx)
	var unreadable *store.UnreadableJobsError
	if err != nil && !errors.As(err, &unreadable) {
		return err
	}
	if asJSON {
		list := report.JobsJSON{Schema: report.JobsSchema, Jobs: []report.JobJSON{}}
		for _, m := range ms {
			state, _ := report.CurrentState(ctx, st, m, "")
			list.Jobs = append(list.Jobs, report.NewJobJSON(m, state))
		}
		if err := writeJSON(g.stdout, list); err != nil {
			return err
		}
		if unreadable != nil {
			// The readable jobs are listed; the others are reported, exit 4.
			return unreadable
		}
		return nil
	}
	if len(ms) == 0 && unreadable == nil {
		fmt.Fprintf(g.stdout, "no jobs in %s\n", job.DescribeStore(st))
		return nil
	}
	for _, m := range ms {
		m.State, _ = report.CurrentState(ctx, st, m, "")
		fmt.Fprintf(g.stdout, "%-24s %-12s %6d items  %s  %s\n", m.ID, m.State, m.Items, m.Created.Local().Format("2006-01-02 15:04"), m.Name)
	}
	if unreadable != nil {
		// The readable jobs are listed; the others are reported, exit 4.
		return unreadable
	}
	return nil
}

// openJob opens the job args[0] names (an id, "latest" or a job's name),
// or the latest job, read-only.
func openJob(ctx context.Context, st store.Store, args []string) (store.Job, error) {
	ref := ""
	if len(args) == 1 {
		ref = args[0]
	}
	id, err := job.ResolveID(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	j, err := st.OpenReadOnly(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, usageErr(fmt.Errorf("no job %s in %s (see `tenax status --all`)", id, job.DescribeStore(st)))
	}
	return j, err
}

func newExportCmd(g *globals) *cobra.Command {
	var (
		failed bool
		format string
		route  string
		out    string
	)
	cmd := &cobra.Command{
		Use:   "export JOB|latest|NAME",
		Short: "Write a job's latest record per item, in idx order, as JSONL or CSV",
		Example: `  tenax export job_20261122_101500 > results.jsonl
  tenax export job_20261122_101500 --failed --format csv -o failures.csv`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if format == "" {
				// As run --output: -o results.csv writes CSV.
				format = store.FormatJSONL
				if out != "" {
					format = job.OutputFormat(out)
				}
			}
			if !slices.Contains([]string{store.FormatJSONL, store.FormatCSV}, format) {
				return usageErr(fmt.Errorf("--format %q: want jsonl or csv", format))
			}
			st, closeStore, err := g.openStoreTelling(ctx)
			if err != nil {
				return err
			}
			defer closeStore()
			j, err := openJob(ctx, st, args)
			if err != nil {
				return err
			}
			defer j.Close()
			if route != "" {
				if err := job.CheckExportRoute(ctx, j, route); err != nil {
					return err
				}
			}
			filter := func(r store.Record) bool {
				return (!failed || r.Failed()) && (route == "" || r.Route == route)
			}
			if out != "" {
				if err := job.CheckOutputNotInput(out, j.Manifest().InputPath); err != nil {
					return err
				}
				return store.WriteOutput(ctx, j, out, format, filter)
			}
			return store.Export(ctx, j, cmd.OutOrStdout(), format, filter)
		},
	}
	addStoreFlag(cmd, g)
	cmd.Flags().BoolVar(&failed, "failed", false, "only the items whose latest record failed (with their tracked errors)")
	cmd.Flags().StringVar(&route, "route", "", "only the items whose latest record a route of this name produced (a job with routes)")
	cmd.Flags().StringVar(&format, "format", "", "jsonl or csv (default: csv for an -o file ending in .csv, else jsonl)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file (atomically) instead of stdout")
	return cmd
}

func newValidateCmd(g *globals) *cobra.Command {
	var inputPath string
	cmd := &cobra.Command{
		Use:   "validate SPEC",
		Short: "Check a job spec or a fix spec and print it resolved, with defaults and secrets redacted",
		Long: `Check a job spec: unknown keys (with a suggestion), wrong types, impossible values
and missing environment variables are reported with file:line:col. On success the
resolved spec is printed with every default filled in and secrets redacted, followed
by comments on what tenax decides from it: for an llm task, how JSON output is asked
of the provider (OpenAI strict json_schema, json_object, Anthropic output_config or a
forced tool, or the prompt alone) and why.

With an input (--input, or the spec's input when the file exists), validate also
checks it as a run would and renders every template of the task against its
first 100 items: a field a template names but the items lack ({{.wrd}}) is
reported with the item's line, and validate exits 2.

A {name} in single braces (Python's and most prompt tools' placeholder) goes
out as written: validate reports it at its file:line:col with the {{.name}}
meant. When the items have a field of that name it is an error (exit 2);
otherwise, or without an input to look at, a warning (braces can be meant;
JSON such as {"es": "..."} is never reported).

A fix spec (for tenax fix: a check and a fixer, no task) is checked the same way,
its workdir and programs included, and printed resolved.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if data, err := os.ReadFile(args[0]); err == nil && spec.IsFix(data) {
				return validateFix(cmd.OutOrStdout(), args[0], inputPath)
			}
			s, err := job.LoadSpec(args[0], os.LookupEnv)
			if err != nil {
				return err
			}
			y, err := s.RedactedYAML()
			if err != nil {
				return err
			}
			notes, err := job.Notes(s)
			if err != nil {
				return err
			}
			for _, n := range notes {
				y = append(y, "# "+s.Redact(n)+"\n"...)
			}
			if _, err = cmd.OutOrStdout().Write(y); err != nil {
				return err
			}
			path, flag := s.Input.Path, inputPath != ""
			if flag {
				path = inputPath
			} else if _, err := os.Stat(path); path == "" || err != nil {
				if path != "" {
					fmt.Fprintf(g.stderr, "templates: not checked: the input %s does not exist yet\n", path)
				}
				// Without items to tell a field from braces meant
				// literally, every {name} is a warning.
				return job.WriteLiteralWarnings(g.stderr, s)
			}
			check, err := job.CheckInputTemplates(s, path, flag)
			if err != nil {
				// The input cannot tell a field from braces meant
				// literally: each {name} is a warning, beside the error.
				if werr := job.WriteLiteralWarnings(g.stderr, s); werr != nil {
					return werr
				}
				return err
			}
			var b strings.Builder
			if err := check.WriteText(&b); err != nil {
				return err
			}
			io.WriteString(g.stderr, s.Redact(b.String()))
			return check.Err()
		},
	}
	cmd.Flags().StringVar(&inputPath, "input", "", "also check this input and render the templates against its first 100 items")
	return cmd
}

// validateFix checks the fix spec at path and prints it resolved, with
// what tenax fix will do with it.
func validateFix(out io.Writer, path, inputPath string) error {
	if inputPath != "" {
		return usageErr(errors.New("--input is for job specs: a fix spec names its own input"))
	}
	f, err := spec.LoadFix(path, os.LookupEnv)
	if err != nil {
		return usageErr(err)
	}
	y, err := f.RedactedYAML()
	if err != nil {
		return err
	}
	note := fmt.Sprintf("# a fix spec: `tenax fix %s` runs the check in %s and gives its errors to the fixer one at a time\n", path, f.Workdir)
	if f.Input.Path != "" {
		note = fmt.Sprintf("# a per-item fix spec: `tenax fix %s` runs one fix loop per item of %s, %d at a time\n", path, f.Input.Path, max(f.Concurrency, 1))
	}
	_, err = io.WriteString(out, string(y)+note)
	return err
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
