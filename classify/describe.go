package classify

import (
	"errors"
	"slices"
)

// Details is everything an error's chain says about itself, gathered for
// the breaker's Inspect and for failure reports. Fields whose signal the
// chain does not carry are zero.
type Details struct {
	// Message is err.Error().
	Message string
	// Status is the HTTP status of a StatusCoder.
	Status int
	// Code is the provider error code of a ProviderCoder.
	Code string
	// RequestID is the provider request id of a RequestIDer.
	RequestID string
	// ExitCode is the exit status of an ExitCoder (-1 when killed by a
	// signal).
	ExitCode int
	// Signal names the signal that killed the process, from an ExitCoder.
	Signal string
	// Stderr is a command's stderr or a response's body, from a
	// StderrCarrier.
	Stderr string
	// Chain is the message of each layer of the chain, outermost first
	// (depth-first through joined errors), without repeats: a wrapper that
	// adds nothing to its cause's message is not listed twice.
	Chain []string
}

// Describe gathers err's Details. A nil err gives the zero Details.
func Describe(err error) Details {
	if err == nil {
		return Details{}
	}
	d := Details{Message: err.Error()}
	if e, ok := errors.AsType[statusError](err); ok {
		d.Status = e.HTTPStatus()
	}
	if e, ok := errors.AsType[providerCodeError](err); ok {
		d.Code = e.ProviderCode()
	}
	if e, ok := errors.AsType[requestIDError](err); ok {
		d.RequestID = e.RequestID()
	}
	if e, ok := errors.AsType[exitError](err); ok {
		d.ExitCode, d.Signal = e.ExitCode(), e.Signal()
	}
	if e, ok := errors.AsType[stderrError](err); ok {
		d.Stderr = e.Stderr()
	}
	d.Chain = appendChain(nil, err)
	return d
}

// appendChain appends the messages of err's tree, depth-first, skipping
// nil errors and messages already listed.
func appendChain(chain []string, err error) []string {
	if err == nil {
		return chain
	}
	if msg := err.Error(); !slices.Contains(chain, msg) {
		chain = append(chain, msg)
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		chain = appendChain(chain, u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			chain = appendChain(chain, e)
		}
	}
	return chain
}
