// Package console is the operator's side of a tenax run on a terminal: the
// prompt that a tripped circuit breaker or a check-in shows, the Inspect
// view of the last error, and the live progress line.
//
// A Prompter reads answers line by line from any io.Reader, so the same code
// serves a real terminal, a pseudo-terminal in tests, and a script piping
// answers in. End of input answers Abort: a run that cannot ask never
// spends more on its own.
//
// Progress renders engine statistics either as one live line redrawn in
// place (on a terminal) or as a plain line every few seconds (in logs and
// CI), so that long runs always say how far they are.
package console
