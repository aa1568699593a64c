// Package batch runs LLM items through the providers' batch APIs (OpenAI's
// /v1/files and /v1/batches, Anthropic's /v1/messages/batches, the Gemini
// API's :batchGenerateContent) at half the online price, with the same outcomes as online calls: retries, heal
// re-asks, the breaker and resume.
//
// Items go in waves. Wave 1 submits every pending item, one request per
// item under the custom id "i<idx>-w<wave>" (CustomID), in as many batches
// as the provider's limits on requests and bytes require. A wave is one
// attempt of each of its items: when its batches have ended, their results
// are joined back to the items by custom id, never by order, and each item
// gets its outcome as the engine would give it. A good, valid answer is
// recorded; an invalid one (the validator's error, or an unusable answer)
// goes through heal's tracker and feedback exactly as the engine's heal
// loop does and is carried into the next wave as a re-ask; a retryable
// error, an expired or a canceled request is carried as a retry, until
// retry.max_attempts consecutive waves failed; any other error is recorded
// as failed with its class. The next wave submits only what was carried.
// A small later wave (Config.OnlineTail) is finished online through the
// engine instead, its records counting what the earlier waves spent.
//
// Crash safety rests on a Ledger (a JSONL file in the job directory,
// fsynced at every line): a wave's items and their heal state are written
// before its first batch is submitted, and each batch's id with its custom
// ids before the batch is polled. A resume reads the ledger, re-polls the
// open wave's batches, submits only the requests no batch holds, and
// applies the results again; since a wave's outcome is a function of the
// state written before it and the provider's answers, applying them twice
// gives the same records and states.
//
// The API operations (upload, create, status, cancel, results) are
// unreliable too: each runs under its own retry policy and classification
// (OpError carries the status, the provider's code and Retry-After). A
// wave in which a large share of the requests failed with one error
// fingerprint (a spent credit balance, a revoked key) trips the breaker
// before the next wave: those items are not recorded as failed but kept
// for the next wave, and the operator is asked whether to go on.
package batch
