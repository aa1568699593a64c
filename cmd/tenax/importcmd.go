package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/tenaxhq/tenax/spec"
)

func newImportCmd(g *globals) *cobra.Command {
	var out, agent string
	var force bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Turn another tool's config into a job spec, saying what each key became",
		Long: `Read another tool's YAML config and write the job spec that does the same, on
stdout or to -o FILE. On stderr, one line per key of the config, at its
file:line:col, says what it became, with its value converted (max_retries: 3 is
retry.max_attempts: 4; a number of seconds is a duration; '{text}' is '{{.text}}';
an API key written in the file is replaced by ${OPENAI_API_KEY}), or why it has no
equivalent. The spec is then checked as validate checks it (environment variables
need not be set): its problems are printed and the exit code is 2.

The shapes read: a translator's top-level llm:, processing: and prompt: sections,
and agents.<name> with batch_processing: (--agent picks the agent when there are
several; by default the one with batch_processing). docs/spec.md ("Importing a
config") lists the keys.`,
		Example: `  tenax import translator.yaml -o translate.yaml
  tenax import agents.yaml --agent reviewer > review.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return importConfig(g, args[0], out, agent, force)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the spec to this file (refused if it exists, unless --force)")
	cmd.Flags().StringVar(&agent, "agent", "", "the agents.<name> to import")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite the -o file")
	return cmd
}

// importConfig is `tenax import`.
func importConfig(g *globals, path, out, agent string, force bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return usageErr(err)
	}
	opts := spec.ImportOptions{Agent: agent}
	specName := "<stdout>"
	if out != "" {
		specName = out
		if _, err := os.Stat(out); err == nil && !force {
			return usageErr(fmt.Errorf("%s exists: give --force to overwrite it", out))
		}
		src, err1 := filepath.Abs(filepath.Dir(path))
		dst, err2 := filepath.Abs(filepath.Dir(out))
		if err := errors.Join(err1, err2); err != nil {
			return usageErr(err)
		}
		opts.SourceDir, opts.SpecDir = src, dst
	}
	im, err := spec.Import(path, data, opts)
	if err != nil {
		return usageErr(err)
	}
	for _, l := range im.Lines {
		if l.From == "" {
			fmt.Fprintf(g.stderr, "%s: %s\n", path, l)
			continue
		}
		fmt.Fprintf(g.stderr, "%s:%d:%d: %s\n", path, l.Line, l.Col, l)
	}
	if out == "" {
		if _, err := g.stdout.Write(im.YAML); err != nil {
			return err
		}
	} else if err := os.WriteFile(out, im.YAML, 0o644); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return usageErr(err)
		}
		return err
	}
	dir := opts.SpecDir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	// Checked as validate would, every ${VAR} taken as set: the user
	// exports the key before running, not before importing.
	set := func(string) (string, bool) { return "set", true }
	if _, err := spec.Parse(specName, im.YAML, dir, set); err != nil {
		return usageErr(fmt.Errorf("the imported spec still needs work:\n%w", err))
	}
	return nil
}
