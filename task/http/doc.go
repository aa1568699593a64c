// Package http is the task that makes one HTTP request per item, built
// from templates: Config.URL, the values of Config.Headers and Config.Body
// are text/templates rendered over the item's fields and the reserved
// names .idx, .id, .feedback and .previous_output (the last two "" until
// the heal loop re-asks; all four win over fields of the same names), with
// the functions json, lower, upper, trim, default and text/template's own
// urlquery. A missing field is an error of class item, never an empty
// string.
//
// A 2xx response's body is the item's output: as a JSON string (Output
// "text") or as the JSON value it must be (Output "json"; otherwise a
// *task.OutputError, which the heal loop re-asks). Any other status is a
// *StatusError carrying what package classify reads (the status, the body,
// x-should-retry, the request id) and the server's retry hint from
// retry-after-ms or Retry-After, which the retry policy honours. Transport
// failures come back wrapped, so errors.Is still finds
// syscall.ECONNRESET or context.DeadlineExceeded underneath.
//
// The task never retries by itself: one Run is one attempt.
package http
