// Command trivialcli is the floor tenax's start-up is measured against: a
// cobra command with a subcommand that does nothing, built with the same
// Go and cobra as tenax (docs/benchmarks.md, "Start-up").
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{Use: "trivialcli", Short: "A cobra command that does nothing"}
	root.AddCommand(&cobra.Command{Use: "status", Short: "Print a word", RunE: func(cmd *cobra.Command, _ []string) error {
		_, err := fmt.Fprintln(cmd.OutOrStdout(), "ok")
		return err
	}})
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
