// Package memory is a store.Store that keeps jobs in the process's memory:
// for tests, examples and short programs that need a checkpoint only while
// they run. It passes the conformance suite of store/storetest, so what a
// test sees of it is what a run sees of store/jsonl or store/postgres.
//
// Records are kept encoded, as a line of results.jsonl would be: Append
// refuses what the other stores refuse (invalid raw JSON, a NaN cost) and
// Scan decodes each record afresh, so a caller never shares memory with
// the store. Nothing survives the process; a Store's jobs live as long as
// the Store value.
package memory
