package classify

// The interfaces below are how an error tells the classifier what it knows.
// Tasks return errors that implement whichever apply; the classifier finds
// them anywhere in the error's chain with errors.As, so wrapping is free.

// StatusCoder is implemented by errors that carry an HTTP status code.
type StatusCoder interface {
	// HTTPStatus returns the response's status code, 0 if there was none.
	HTTPStatus() int
}

// ProviderCoder is implemented by errors that carry a provider's error
// code or type, such as OpenAI's "insufficient_quota" or Anthropic's
// "overloaded_error".
type ProviderCoder interface {
	// ProviderCode returns the code, "" if the provider gave none.
	ProviderCode() string
}

// ExitCoder is implemented by errors of commands that ran and ended badly.
type ExitCoder interface {
	// ExitCode returns the process's exit status, or -1 when it was
	// killed by a signal.
	ExitCode() int
	// Signal returns the name of the signal that killed the process
	// ("killed", "terminated"), "" when it exited by itself.
	Signal() string
}

// ShouldRetrier is implemented by errors of responses that said whether
// to retry, as the x-should-retry header does.
type ShouldRetrier interface {
	// ShouldRetry returns the server's advice, and ok=false when the
	// server gave none.
	ShouldRetry() (retry, ok bool)
}

// StderrCarrier is implemented by errors that kept a command's stderr or
// a response's body; rules match their regex against it too.
type StderrCarrier interface {
	// Stderr returns the captured text, possibly truncated.
	Stderr() string
}

// RequestIDer is implemented by errors of provider responses that carry a
// request id, for reports and Inspect.
type RequestIDer interface {
	// RequestID returns the provider's id for the request, "" if none.
	RequestID() string
}
