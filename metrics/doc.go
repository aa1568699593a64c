// Package metrics is tenax's Prometheus metrics: the same series whether
// a job runs in one process (tenax run --ui or --metrics), on workers
// (tenax worker --metrics) or is watched from its store (tenax ui).
//
// Every series of a job carries its id as the job_id label, so that the
// workers of one job, each scraped on its own, sum to the job's totals:
// sum by (job_id) (tenax_items_total). Call-level series add the
// provider and model of the job's task (provider and model are one
// per job: bounded cardinality). A Jobs counts what only the engine's
// events tell (outcomes by class, failed calls, 429s, retries, each
// call's latency) and reads what the engine already counts (calls,
// tokens, cost, in flight) from engine.Stats at scrape time, so a scrape
// agrees with the progress line.
//
// Nothing is registered on Prometheus's global registry: a caller gives
// each collector its registry, so that two runs in one process never
// collide. Handler serves a registry in the text format, or OpenMetrics
// when the scraper asks for it. docs/metrics.md lists every series.
package metrics
