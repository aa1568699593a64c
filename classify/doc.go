// Package classify decides what an attempt's error means for its work
// item: retry it, stop the run, give up on this item alone, re-ask with
// feedback, or leave it pending.
//
// # Classes
//
//	class      meaning                                   retried?            breaker counts it?
//	retryable  transient: timeouts, resets, 429, 5xx     yes, with backoff   once retries are exhausted
//	fatal      the setup is wrong: 401, 403, quota       no                  yes
//	item       only this item is bad: 400, 413, 422      no                  yes
//	invalid    the call worked, the output did not       re-asked (heal)     once heal budgets are exhausted
//	canceled   the run was interrupted                   no                  no; the item stays pending
//
// # Order
//
// A Classifier returns a Decision: a Class and the short reason that
// chose it. It looks at an error in this order, and the first step that
// decides wins:
//
//  1. The user's Rules, in order (reason `rule "quota"`). A rule matches
//     when all of its set conditions do: a regex on the message or on the
//     carried stderr/body, a status, a provider code, an exit code.
//  2. A mark left by WithClass, for a producer that knows better than any
//     generic signal (`marked: template`).
//  3. context.Canceled anywhere in the chain: the run was interrupted,
//     Canceled (`run canceled`). context.DeadlineExceeded: the attempt's
//     timeout, Retryable (`attempt deadline`). These come before the
//     carried signals because a killed process or a cut body is only the
//     consequence of the interruption.
//  4. What the error carries, found anywhere in its chain with errors.As:
//     a ShouldRetrier saying `x-should-retry: true` is Retryable; saying
//     false, classification goes on but never ends Retryable (it becomes
//     Item, `x-should-retry: false`). Then the StatusCoder's status with
//     the ProviderCoder's code (`status 429`, `status 429 code
//     insufficient_quota`), then the ExitCoder's exit code or signal
//     (`exit 127`, `signal killed`).
//  5. Go's own errors: *exec.Error and a fork/exec ENOENT, EACCES or ENOEXEC
//     are Fatal (`command not found`, `command not executable`); *net.DNSError not-found is Fatal,
//     temporary or timeout Retryable; ECONNRESET, ECONNREFUSED,
//     ECONNABORTED, EPIPE, EHOSTUNREACH, ENETUNREACH are Retryable under
//     their names; a net.Error whose Timeout() is true is Retryable
//     (`net.Error timeout`); io.ErrUnexpectedEOF, and io.EOF inside a
//     *url.Error, are Retryable.
//  6. Keywords in the message, case-insensitive: "timeout", "timed out",
//     "connection reset", "connection refused", "reset by peer", "broken
//     pipe", "temporarily unavailable", "try again", "temporary failure",
//     and as words "EOF", "network", "unreachable" and "EAI_AGAIN", are
//     Retryable (`keyword "timeout"`).
//  7. Otherwise Item, with the reason `no signal` (Classifier.Otherwise
//     picks another class).
//
// The last step is a choice. An error that says nothing about the
// network, the server or the process is most often about this item: a
// template that does not render, a value the task rejects, an answer it
// cannot parse. Retrying it would spend the retry budget on a certain
// failure, and calling it Fatal would let one odd item stop a run. As
// Item it fails alone, and the breaker still stops a run when such
// failures come one after another. A task whose errors deserve another
// class says so with WithClass or the signal interfaces; a Classifier
// whose Otherwise is Retryable retries every such error, as
// cenkalti/backoff, retry-go and failsafe-go do (docs/decisions.md).
//
// # Statuses and provider codes
//
// 408, 409, 425, 429 and every 5xx (529 included) are Retryable; 401, 402,
// 403 and 404 (a model or endpoint that does not exist) are Fatal; 400,
// 413, 422 and every other 4xx are Item. Statuses below 400 decide
// nothing. Providers reuse statuses, so a decisive provider code wins over
// the status: insufficient_quota, enforced_spend_limit_reached,
// billing_error, authentication_error, invalid_api_key, permission_error,
// not_found_error and model_not_found are Fatal; overloaded_error,
// rate_limit_error and rate_limit_exceeded are Retryable;
// request_too_large is Item. A 429 whose message or body mentions a
// "spend limit" is Fatal, one that says "request too large" is Item; a 400
// that says "credit balance is too low" (Anthropic's empty wallet) is
// Fatal. The
// generic codes invalid_request_error, context_length_exceeded and
// content_filter are Item, but only decide when there is no status.
//
// # Exit codes
//
// 75 (EX_TEMPFAIL) and 124 (timeout(1)) are Retryable, as is a process
// killed by a signal; 126 and 127 (not executable, not found) are Fatal;
// any other non-zero exit is Item unless its stderr says why.
//
// # What stderr says
//
// A generic exit code's stderr decides by whole signals, never by a word
// inside other text. Its headline (see Headline) decides first, and when
// it ends a Python traceback or is a Go panic it is the only line read,
// for the frames around it are source code. A test failure
// (AssertionError, pytest's E and FAILED lines, go test's --- FAIL)
// decides nothing. An exception line decides by its class, from a table
// of Python's, its standard library's and the common clients' and SDKs'
// (requests, urllib3, httpx, aiohttp, botocore, openai, anthropic):
// "openai.APIConnectionError: Connection error." is Retryable (`exit 1,
// stderr exception openai.APIConnectionError`). An HTTP status its message
// names, with the provider code of the printed body, decides as a
// response's would ("openai.RateLimitError: Error code: 429 - {...
// 'insufficient_quota' ...}" is Fatal), as does botocore's AWS code. A
// program's own mistake (ValueError, KeyError) decides nothing. Any other
// line decides by a status it names ("503 Service Unavailable") or by a
// signal phrase ("no route to host", "connection refused", "timed out"):
// the classic network words count within such phrases, not alone.
//
// Describe gathers the same signals into Details for reports and the
// breaker's Inspect.
package classify
