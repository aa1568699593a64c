// Package mock is a simulated LLM provider: it speaks OpenAI's chat
// completions and Anthropic's messages APIs, answers with two toy models,
// and fails on purpose, the way real providers fail.
//
// Use it to rehearse a job before spending money, and as the test double
// of task/llm. It validates requests as the real APIs do and answers with
// their error bodies, headers, event streams, tool calls and structured
// outputs, closely enough that the official SDKs make of it what they
// make of the real thing (conformance/sdk proves it).
//
// Each request draws, from a seeded random source, at most one fault among
// those of Config.Faults: the providers' errors (429, 500, 529/503, 401,
// quota, spend limit, 402, 403, 413, context length), a timeout that never
// answers, a TCP reset, a connection cut in the middle of the answer, and
// answers that are wrong (invalid output, truncation, content filter,
// refusal). For a given seed and request order the faults are the same,
// run after run. Config.RPM and Config.TPM are rate limits per model and
// dialect, token buckets refilled continuously as the providers' are,
// announced in their headers on every answer and enforced with their 429s.
//
// The models are ModelEcho ("mock-echo"), which answers the prompt itself,
// and ModelJSON ("mock-json"), which answers {"text": prompt, "length":
// runes}. Any other model gets the provider's 404. On a re-ask (a
// conversation holding an assistant turn) the prompt is the user message
// before that turn, so the heal loop's re-ask gets the answer the first
// question deserved. Usage counts a token for every four characters.
//
// The wire formats are values of one type, dialect, and the endpoints a
// table of routes (route.go); an endpoint is added as a route. A Server is
// an http.Handler (`tenax mock` serves one with ListenAndServe), and its
// Transport serves requests in-process, with no socket, for tests and for
// `provider: mock`. Config.LogRequests writes every request and answer as
// JSON lines, API keys redacted.
package mock
