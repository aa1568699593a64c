// Package store defines where a job's checkpoint lives: a Store holds
// jobs, and a Job is an append-only log of Records, of which the latest per
// item index (idx) is that item's outcome.
//
// A run appends one Record per finished item and never rewrites one; an
// item retried later simply gets a newer record. Resume needs only each
// idx's latest outcome, so Job.Outcomes is a byte per item (Succeeded,
// Failed or Pending), never the records themselves: ten million items cost
// ten megabytes however large their outputs. Job.Scan walks the latest
// records in idx order holding one at a time, and Job.Failures walks the
// failed ones — what failures.jsonl and `--retry-failures` are made of.
//
// Two implementations pass one conformance suite (store/storetest): the
// JSONL job directory of store/jsonl, the default, and store/postgres.
// Export and WriteOutput turn any Job into a compacted, idx-ordered JSONL
// or CSV file; Record.AppendJSON is the allocation-free encoding of one
// line of results.jsonl.
//
// A job is opened for writing by one process at a time (Store.Open, which
// the JSONL store enforces with a file lock, ErrInUse otherwise) and for
// reading by any number (Store.OpenReadOnly: status, export).
//
// Many workers on many machines sharing one job is a later step, and its
// seam is here: a worker would lease a range of pending idx from the Job
// (a lease renewed by heartbeat and taken over when it expires), append its
// records as today, and the Job would keep one final record per idx. That
// adds methods to a Postgres job (Lease, Renew, Release) rather than
// changing the ones above, which stay what a single writer needs.
package store
