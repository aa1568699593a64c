// Package postgres is tenax's LLM response cache in a PostgreSQL
// database: the cache of a job whose store is PostgreSQL, shared by every
// worker and every tenax run on that database, so that an answer paid for
// on one machine is a hit on every other. It keeps package cache's
// semantics: the same keys (cache.Key, llm.CacheKey), a rejected entry
// moved aside with its reason, a bound with the oldest entries evicted,
// stats and prune.
//
// The entries are the rows of tenax_cache (key, value, put_at, and bytes,
// the key's and the value's lengths, computed by the database), in the
// schema the pool's search_path names; the store's numbered migrations
// make it (version 2 of store/postgres's line), so a pool the store opened
// has it. Rejected entries are rows of tenax_cache_rejected, and
// tenax_cache_size holds the sum of the entries' bytes, kept by
// statement-level triggers on tenax_cache whatever changes it.
//
// Puts are batched as package cache's are: a Put is seen at once by this
// Cache's Gets, and a writer goroutine writes every Put of the last
// FlushDelay in one round trip and one transaction, seen by every other
// process once it commits. Flush and Close wait for that commit. A Get not
// answered by the batch is one SELECT by primary key. Each write locks
// tenax_cache_size's row first, so writers (puts, rejections, eviction,
// prune) take turns and never deadlock on the entries' rows.
//
// The bound is Options.MaxBytes of entry bytes: once a write leaves the
// table over it, the oldest entries (by put_at, the time of their last
// Put) are deleted in the background until three quarters of the bound
// are left, so the next eviction is a quarter of the bound of new entries
// away. Any process that finds the table over the bound evicts; the
// others, taking their turn on the row, find nothing left to do.
package postgres
