// Package conformance holds suites that check tenax against things outside
// Go: sdk/ drives `tenax mock` through the official OpenAI and Anthropic
// Node SDKs and asserts that every fault and feature comes out of the SDKs
// as it comes out of the real APIs (the error class, the status, the
// parsed object). TestSDKConformance runs it with `node --test` when
// conformance/sdk/node_modules exists (`npm ci` there, or .ci/run) and
// skips otherwise.
package conformance
