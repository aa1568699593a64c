// Package mock is a simulated LLM provider: it speaks OpenAI's chat
// completions and Anthropic's messages APIs, answers with two toy models,
// and fails on purpose, the way real providers fail.
//
// Use it to rehearse a job's fault handling before spending money, and as
// the test double of task/llm. Each request draws, from a seeded random
// source, at most one fault among those of Config.Faults: a 429 with
// Retry-After, a 500, an overload (529 for Anthropic, 503 for OpenAI), a
// timeout that never answers, a TCP reset, a truncated JSON body, a
// plausible but wrong answer, or a 401. For a given seed and request order
// the faults are the same, run after run. Config.RPM and Config.TPM add a
// hidden rate limit over a sliding minute, announced in the providers'
// rate limit headers and enforced with their 429s.
//
// The models are ModelEcho ("mock-echo"), which answers the prompt itself,
// and ModelJSON ("mock-json"), which answers {"text": prompt, "length":
// runes}. Any other model gets the provider's 404. On a re-ask (a
// conversation holding an assistant turn) the prompt is the user message
// before that turn, so the heal loop's re-ask gets the answer the first
// question deserved. Usage counts a token for every four characters.
//
// A Server is an http.Handler (`tenax mock` serves one with
// ListenAndServe), and its Transport serves requests in-process, with no
// socket, for tests and for `provider: mock`.
package mock
