package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/report"
)

// completing reports whether args may be a shell completion script's call
// (cobra's hidden __complete command, after any persistent flags), the
// only one that reads what completeDynamic registers: registering it on
// every start walked every command's flag sets (0.15 ms of `tenax --help`;
// docs/benchmarks.md, "Start-up").
func completing(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		return a == cobra.ShellCompRequestCmd || a == cobra.ShellCompNoDescRequestCmd
	})
}

// completeDynamic adds what the shell completion scripts (bash, zsh, fish,
// powershell: cobra's `tenax completion SHELL`) ask tenax for at each TAB:
// the jobs of --home or --store for a JOB argument, the error fingerprints
// of the job named for --fingerprint, and the values of the flags that take
// a fixed set. The scripts call `tenax __complete ARGS… PREFIX`, with the
// flags already typed parsed, so --home and --store pick the jobs.
func completeDynamic(root *cobra.Command, g *globals) {
	jobArg := map[string]int{"status": 0, "export": 0, "resume": 0, "ui": 0, "breaker": 1}
	for _, cmd := range root.Commands() {
		if pos, ok := jobArg[cmd.Name()]; ok {
			cmd.ValidArgsFunction = completeJobArg(g, pos, cmd.Name() == "breaker")
		}
		values := map[string][]string{
			"log-format": {"text\tkey=value lines", "json\tone JSON object a line"},
			"log-level":  {"debug", "info", "warn", "error"},
		}
		if cmd.Name() == "export" {
			values["format"] = []string{"jsonl\tone JSON record a line", "csv\ta header row, then one row an item"}
		}
		for name, vs := range values {
			if cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil {
				continue
			}
			_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(vs, cobra.ShellCompDirectiveNoFileComp))
		}
		if cmd.Flags().Lookup("retry-failures") != nil {
			_ = cmd.RegisterFlagCompletionFunc("retry-failures", completeClasses)
		}
		if cmd.Flags().Lookup("fingerprint") != nil {
			_ = cmd.RegisterFlagCompletionFunc("fingerprint", completeFingerprints(g))
		}
	}
}

// completeJobArg completes the JOB argument at position pos: `latest`, the
// job ids (described by name, state and items) and the jobs' names. With
// decisions, the argument before it is breaker's continue or abort.
func completeJobArg(g *globals, pos int, decisions bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if decisions && len(args) == 0 {
			return []string{"continue\treset the breaker; the workers go on", "abort\tstop the job on every worker"}, cobra.ShellCompDirectiveNoFileComp
		}
		if len(args) != pos {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return jobCompletions(cmd.Context(), g), cobra.ShellCompDirectiveNoFileComp
	}
}

// jobCompletions lists the jobs newest first; a store that cannot be read
// completes nothing rather than printing an error into the command line.
func jobCompletions(ctx context.Context, g *globals) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	st, closeStore, err := g.openStore(ctx)
	if err != nil {
		return nil
	}
	defer closeStore()
	ms, err := st.List(ctx)
	if err != nil || len(ms) == 0 {
		return nil
	}
	out := []string{job.Latest + "\tthe newest job, " + ms[len(ms)-1].ID}
	var names []string
	for _, m := range slices.Backward(ms) {
		state, _ := report.CurrentState(ctx, st, m, "")
		desc := fmt.Sprintf("%s, %d items", state, m.Items)
		if m.Name != "" {
			desc = m.Name + ", " + desc
			if !slices.Contains(names, m.Name) {
				names = append(names, m.Name)
			}
		}
		out = append(out, m.ID+"\t"+desc)
	}
	for _, n := range names {
		out = append(out, n+"\tthe latest job named "+n)
	}
	return out
}

// completeClasses completes --retry-failures=CLASS,…: the classes not yet
// in the list, each after what was typed.
func completeClasses(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	typed, _ := cutLast(toComplete, ",")
	var out []string
	for _, c := range []classify.Class{classify.Retryable, classify.Fatal, classify.Item, classify.Invalid} {
		if typed != "" && slices.Contains(strings.Split(typed, ","), c.String()) {
			continue
		}
		out = append(out, typed+c.String())
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// cutLast splits s after its last sep: "a,b,c" gives "a,b," and "c".
func cutLast(s, sep string) (before, after string) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return "", s
	}
	return s[:i+len(sep)], s[i+len(sep):]
}

// completeFingerprints completes --fingerprint with the error groups of the
// job the command names (args[0], else the latest), largest first.
func completeFingerprints(g *globals) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		st, closeStore, err := g.openStore(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer closeStore()
		j, err := openJob(ctx, st, args[:min(len(args), 1)])
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer j.Close()
		r, err := report.BuildReport(ctx, j, job.BatchWaves)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		out := make([]string, 0, len(r.Groups))
		for _, gr := range r.Groups {
			out = append(out, fmt.Sprintf("%s\t%d %s: %s", gr.Fingerprint, gr.Count, gr.Class, oneLineCompletion(gr.Normalized)))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// oneLineCompletion fits an error message into a completion's description:
// one line, at most 60 characters.
func oneLineCompletion(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}
