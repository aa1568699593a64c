// Package store defines where a job's checkpoint lives: a Store holds
// jobs, and a Job is an append-only log of Records, of which the latest per
// item index is that item's outcome.
//
// Two implementations pass one conformance suite (store/storetest): the
// JSONL job directory of store/jsonl, the default, and store/postgres for
// many workers on many machines. Resume needs only each index's latest
// outcome, so Outcomes is a byte per item, never the records themselves.
package store
