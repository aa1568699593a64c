// Package cache is tenax's LLM response cache: entries keyed by the hash of
// everything that determines a response (provider, model, messages,
// parameters), so a rerun or a resumed job answers a repeated request from
// disk instead of paying for it again.
//
// The entries live in one append-only log, dir/entries.log, indexed in
// memory by each process that opens it. Puts are batched: a Put adds its
// record to a batch in memory, seen at once by this Cache's Gets, and a
// writer goroutine writes the batch within FlushDelay (5 ms) in one write
// under the log's exclusive lock (flock); many Puts share one write and
// one lock. The log is fsynced SyncInterval (100 ms) after the first
// write not yet synced, so the batches of that interval share one fsync
// (at 20 ms a call and 32 in flight a batch holds some seven answers;
// docs/benchmarks.md has what an fsync each cost). A Get looks the key up
// in the batch, then in the index, after reading whatever other processes
// appended since, so several jobs under one home share the cache as they
// run, and the last write of a key wins. Each record carries a CRC, and a
// scan skips bytes that are no whole record up to the next record's magic.
//
// What an entry survives. When Put returns the entry is in memory only.
// Within FlushDelay it is written to the log: from then on it survives a
// kill -9 of the process (the write is in the kernel's page cache), so a
// kill -9 loses only the entries of the last FlushDelay. Within
// SyncInterval of that write it is synced, and survives a crash of the
// machine or a power loss as well; such a crash loses the entries of the
// last FlushDelay plus SyncInterval. Flush (and Close, which a job calls
// when it ends) acknowledge every entry put before them: when they return
// the entries are written and synced. A crash never leaves a log that
// cannot be read: a batch killed in its write is a torn tail, cut off by
// the next Open. It is a cache: a lost entry is only a call made again,
// and only for an item whose record did not reach the job's results log
// either, since the record holds the answer. The results log writes and
// syncs its records every 100 records or every second (package
// store/jsonl), so after a kill -9 the cache holds the answers the results
// log lost, and a crash of the machine makes again at most the calls
// answered in its last FlushDelay plus SyncInterval (105 ms; 5 ms when
// each batch had its own fsync). A cache from before the log, one JSON
// file per entry (dir/<key[:2]>/<key>.json), is moved into the log by the
// first Open. docs/decisions.md says why a log and not an embedded
// database.
//
// The log is bounded by Options.MaxBytes: past it, a compaction in the
// background writes the newest entries that fit in three quarters of the
// bound to dir/entries.log.compact, without the log's lock (the bytes it
// copies are final), then, under the lock, the records written meanwhile,
// fsyncs it and renames it over the log. Killed before the rename it
// leaves the old log whole (the next Open removes the half-written one);
// after, the new one, synced. Other processes notice the new file at their
// next write and reopen it; Prune and Clear compact on demand.
//
// A cached answer can prove wrong: the heal loop finds it invalid. Reject
// removes such an entry, so the next run regenerates it instead of being
// served the same bad answer forever, and keeps it as
// dir/rejected/<key>.json with the reason, for whoever wants to know what
// the model got wrong. The answer that passed after the re-asks is then
// Put under the first question's key too (the engine does it, package
// engine's SettleCache), so the next job asking that question is served
// the healed answer and never the bad one.
//
// Keys come from Key, the hex SHA-256 of a value's JSON encoding. Only
// such keys are accepted (16 to 1024 lowercase hex digits).
package cache
