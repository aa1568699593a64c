// Package cobracli is the cobra command that does nothing which tenax's
// start-up is measured against: cmd/trivialcli runs it alone, cmd/depfloor
// with tenax's libraries linked in, so that the two differ by those
// libraries and nothing else (docs/benchmarks.md, "Start-up").
package cobracli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// Main runs a root command named use, with --help and a subcommand status
// that prints a word, on the process's arguments, and exits 1 on an error.
func Main(use string) {
	root := &cobra.Command{Use: use, Short: "A cobra command that does nothing"}
	root.AddCommand(&cobra.Command{Use: "status", Short: "Print a word", RunE: func(cmd *cobra.Command, _ []string) error {
		_, err := fmt.Fprintln(cmd.OutOrStdout(), "ok")
		return err
	}})
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
