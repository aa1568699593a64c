// Package llm is the task that calls a large language model: one chat
// call per attempt, to OpenAI (or any OpenAI-compatible server), Azure
// OpenAI, Anthropic, or the simulated provider of package mock, through the
// providers' official SDKs with their own retries turned off, because
// tenax alone decides what to retry.
//
// An answer is a success only when the provider finished it: one cut off
// at max_tokens is invalid output whose feedback says so (a re-ask may
// raise max_tokens up to Config.MaxTokensCeiling), and a refusal or a
// content filter is the item's failure, carrying the provider's words
// (*StopError). Every Result says how the answer ended (FinishReason).
//
// JSON output is asked for in the strongest way provider and schema
// allow (Structured says which, and why): OpenAI's strict json_schema,
// its json_object mode, Anthropic's output_config or a forced tool. The
// output is validated locally all the same.
//
// Prepare readies an attempt once (the prompt rendered, its tokens
// estimated, the cache consulted), so the engine can pace and budget it
// before calling without rendering it again.
//
// A Task renders its prompt templates with the item's fields and sends
// [system, user]; on a heal re-ask (item.Feedback set) it adds the
// previous answer and the feedback, and nothing from earlier attempts, so
// a re-ask costs no more than the one before it. The answer becomes the
// item's output: a JSON string for Output "text", the JSON itself for
// Output "json" (a ```json fence is stripped; anything that does not
// parse is a *task.OutputError, which the heal loop re-asks).
//
// Failures carry what package classify reads: a provider's error response
// is an *Error with its status, the provider's code or type, the request
// id, the Retry-After hint and the x-should-retry advice; transport errors
// and the attempt's timeout stay reachable with errors.Is; a body that
// cannot be decoded is marked retryable. The API key never appears in an
// error, a cache key or a result.
//
// Every response's rate limit headers come back on its task.Result
// (Quota, on failed attempts too) and reach Config.OnRateLimit, so a
// limiter can learn the provider's real limits. Usage comes from the
// response, and the cost from a built-in price table (DefaultPrices) that
// Config.Prices extends. With Config.Cache, an identical call (same
// provider, base URL, model, messages and parameters: see CacheKey) is
// served from the cache without calling the provider.
package llm
