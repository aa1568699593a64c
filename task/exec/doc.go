// Package exec is the task that runs a command for each item, GNU
// parallel style: `argv: ["./review.sh", "{{.path}}"]`.
//
// Every element of Config.Argv is a text/template rendered over the
// item's fields, and each rendered value is exactly one argument of the
// program: no shell ever parses it, so a field holding `$(rm -rf ~)` or
// `; reboot` reaches the program as those literal characters. Templates
// see the item's fields and the reserved names .idx, .id, .feedback and
// .previous_output (the last two are "" on the first attempt; all four win
// over fields of the same names), with the functions json, lower, upper,
// trim and default; a missing field is an error of class item, never an
// empty string.
//
// Each attempt runs in a process group of its own. When Config.Timeout
// expires or the run is canceled, the group gets SIGTERM and, after a short
// grace, SIGKILL, so a script's background children die with it and a
// grandchild holding stdout open cannot hang the run.
//
// Failures come back as *ExitError, which carries what package classify
// reads: the exit code and signal, and stderr (its head and tail when
// long). The shell's codes stand in where the program never chose one:
// 127 not found, 126 not executable, 124 timed out. Config.ExitCodes
// overrides the classifier's defaults for listed codes.
//
// When the heal loop re-asks an item, the feedback and the previous output
// are written to temporary files named by $TENAX_FEEDBACK and
// $TENAX_PREVIOUS_OUTPUT (removed after the attempt); $TENAX_IDX and
// $TENAX_ATTEMPT are always set.
package exec
