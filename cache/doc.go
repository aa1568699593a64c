// Package cache is tenax's LLM response cache: entries keyed by the hash of
// everything that determines a response (provider, model, messages,
// parameters), so a rerun or a resumed job answers a repeated request from
// disk instead of paying for it again.
//
// The entries live in one append-only log, dir/entries.log, indexed in
// memory by each process that opens it. A Put is one record appended in
// one write under the log's exclusive lock (flock); a Get looks the key up
// in the index, after reading whatever other processes appended since, so
// several jobs under one home share the cache as they run, and the last
// Put of a key wins. Each record carries a CRC, and a scan skips bytes
// that are no whole record up to the next record's magic: a writer killed
// in its write, or a block a power loss zeroed, costs the entries in those
// bytes, never the log.
//
// What an entry survives: once Put returns it is in the log and seen by
// every process, and survives the writer's crash (kill -9 included); it is
// on the disk within SyncDelay, one fsync covering every write in that
// time, and at Close. A machine that loses power may lose the entries of
// that last moment; it is a cache, and a lost entry is only a call made
// again. A cache from before the log, one JSON file per entry
// (dir/<key[:2]>/<key>.json), is moved into the log by the first Open.
// docs/decisions.md says why a log and not an embedded database.
//
// A cached answer can prove wrong: the heal loop finds it invalid. Reject
// removes such an entry, so the next run regenerates it instead of being
// served the same bad answer forever, and keeps it as
// dir/rejected/<key>.json with the reason, for whoever wants to know what
// the model got wrong.
//
// Keys come from Key, the hex SHA-256 of a value's JSON encoding. Only
// such keys are accepted (16 to 1024 lowercase hex digits).
package cache
