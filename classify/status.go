package classify

import (
	"errors"
	"strconv"
)

// byStatus classifies by the HTTP status and the provider's error code.
//
// A decisive provider code (insufficient_quota, billing_error,
// overloaded_error, …) wins over the status, because providers reuse
// statuses: OpenAI's exhausted quota is a 429 like a rate limit, and
// Anthropic's billing error is a 400 like a bad request. A generic code
// (invalid_request_error, context_length_exceeded, content_filter) only
// decides when there is no status.
func byStatus(err error) (Decision, bool) {
	status := 0
	if e, ok := errors.AsType[statusError](err); ok {
		status = e.HTTPStatus()
	}
	code := ""
	if e, ok := errors.AsType[providerCodeError](err); ok {
		code = e.ProviderCode()
	}
	if status == 0 && code == "" {
		return Decision{}, false
	}
	class, decisive := codeClass(code)
	if decisive {
		return Decision{Class: class, Reason: statusCodeReason(status, code)}, true
	}
	if status == 400 && mentions(err, "credit balance is too low") {
		// Anthropic's empty wallet: a 400 invalid_request_error that only
		// its message tells apart from a bad request. No item can pass
		// until someone buys credits.
		return Decision{Class: Fatal, Reason: "status 400 credit balance too low"}, true
	}
	if status == 429 {
		// Anthropic's spend limit and OpenAI's "Request too large" come as
		// 429s that only the message tells apart from a rate limit.
		if mentions(err, "spend limit") {
			return Decision{Class: Fatal, Reason: "status 429 spend limit"}, true
		}
		if mentions(err, "request too large") {
			return Decision{Class: Item, Reason: "status 429 request too large"}, true
		}
	}
	if sc := statusClass(status); sc != Unknown {
		return Decision{Class: sc, Reason: statusCodeReason(status, code)}, true
	}
	if class != Unknown {
		return Decision{Class: class, Reason: statusCodeReason(0, code)}, true
	}
	return Decision{}, false
}

// mentions reports whether err's message or carried body contains
// phrase, ignoring case.
func mentions(err error, phrase string) bool {
	if indexFold(err.Error(), phrase, false) >= 0 {
		return true
	}
	if e, ok := errors.AsType[stderrError](err); ok {
		return indexFold(e.Stderr(), phrase, false) >= 0
	}
	return false
}

// statusClass is the class table of docs/classes.md by HTTP status; Unknown for
// statuses that are not errors (below 400) or not HTTP (600 and above).
func statusClass(status int) Class {
	switch {
	case status == 408, status == 409, status == 425, status == 429:
		return Retryable
	case status == 401, status == 402, status == 403:
		return Fatal
	case status == 404:
		// docs/classes.md's fatal 404 is the model's: providers say so with a
		// code (model_not_found, not_found_error), decided above. A bare
		// 404 of an HTTP task (GET /users/{{.id}}) is this item's; a wrong
		// base URL that 404s every item still trips the breaker.
		return Item
	case status >= 400 && status < 500:
		return Item
	case status >= 500 && status < 600:
		return Retryable
	}
	return Unknown
}

// codeClass is the class of a provider error code (OpenAI's code or
// type, Anthropic's error type), and whether it wins over the status.
func codeClass(code string) (c Class, decisive bool) {
	switch code {
	case "insufficient_quota", "enforced_spend_limit_reached", "billing_error",
		"organization_spend_limit_exceeded", "project_spend_limit_exceeded",
		"organization_usage_limit_exceeded", "credit_balance_exhausted",
		"authentication_error", "invalid_api_key", "permission_error",
		"not_found_error", "model_not_found",
		// Bedrock's exceptions (x-amzn-ErrorType): no access to the model,
		// a model id that resolves to none, credentials AWS does not know.
		"AccessDeniedException", "ResourceNotFoundException", "UnrecognizedClientException",
		// Google's (Gemini, Vertex AI): a key it does not know, billing or
		// a region it refuses, a model that is not there, no permission,
		// and a per-day quota spent (tenax's name for a 429
		// RESOURCE_EXHAUSTED whose QuotaFailure is per day).
		"API_KEY_INVALID", "FAILED_PRECONDITION", "NOT_FOUND", "PERMISSION_DENIED", "UNAUTHENTICATED",
		"RESOURCE_EXHAUSTED_PER_DAY":
		return Fatal, true
	case "overloaded_error",
		"ThrottlingException", "ServiceUnavailableException", "ModelNotReadyException",
		"InternalServerException", "ModelTimeoutException",
		"INTERNAL", "UNAVAILABLE", "DEADLINE_EXCEEDED":
		return Retryable, true
	case "rate_limit_error", "rate_limit_exceeded", "RESOURCE_EXHAUSTED":
		// Not decisive: OpenAI's "Request too large" and Anthropic's spend
		// limit come with these codes too, and only the 429's message
		// tells them apart; a plain 429 is retryable by its status.
		return Retryable, false
	case "request_too_large":
		return Item, true
	case "invalid_request_error", "context_length_exceeded", "content_filter", "ValidationException",
		"INVALID_ARGUMENT":
		return Item, false
	}
	return Unknown, false
}

// statusCodeReason spells a status decision: "status 429", "status 429
// code insufficient_quota", "code overloaded_error". The common statuses
// without a code are constants, so the hot path does not allocate.
func statusCodeReason(status int, code string) string {
	if code == "" {
		return statusReason(status)
	}
	if status == 0 {
		return "code " + code
	}
	return statusReason(status) + " code " + code
}

func statusReason(status int) string {
	switch status {
	case 400:
		return "status 400"
	case 401:
		return "status 401"
	case 402:
		return "status 402"
	case 403:
		return "status 403"
	case 404:
		return "status 404"
	case 408:
		return "status 408"
	case 409:
		return "status 409"
	case 413:
		return "status 413"
	case 422:
		return "status 422"
	case 425:
		return "status 425"
	case 429:
		return "status 429"
	case 500:
		return "status 500"
	case 502:
		return "status 502"
	case 503:
		return "status 503"
	case 504:
		return "status 504"
	case 529:
		return "status 529"
	}
	return "status " + strconv.Itoa(status)
}
