// Command tenax runs unreliable operations (LLM calls, HTTP calls, shell
// commands) over many work items and brings every item to a final, recorded
// outcome. See the README for a quick start and `tenax --help` for commands.
package main

import "os"

func main() {
	os.Exit(execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
