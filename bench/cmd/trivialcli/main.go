// Command trivialcli is the floor tenax's start-up is measured against: a
// cobra command with a subcommand that does nothing, built with the same
// Go and cobra as tenax (docs/benchmarks.md, "Start-up").
package main

import "github.com/tenaxhq/tenax/bench/internal/cobracli"

func main() { cobracli.Main("trivialcli") }
