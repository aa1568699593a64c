// Package report reads a job's checkpoint into what `tenax status` and
// the web view show: outcomes, failures grouped by error fingerprint with
// the spec's heal hints that match them, attempts, tokens and cost, and
// the provider batch waves of a batch job.
//
// A Report is a value: BuildReport reads the records once, holding one at
// a time, and WriteText is one way to render it; a caller can render the
// same value as JSON or HTML.
package report
