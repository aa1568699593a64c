// Command tenax is the CLI of the tenax library: run, resume, status,
// export, validate, mock and version. It only wires packages: package job
// does what run and resume mean, console draws the progress line and asks
// the operator, and this command adds flags, signals and exit codes.
//
// Exit codes: 0 all items succeeded; 1 finished with failures; 2 usage or
// spec error, or a job another process holds (its pid is named); 3 aborted
// by the breaker, a budget or the operator; 4 tenax's own storage or input
// failed; 130 interrupted.
package main
