// Package pgtest gives each PostgreSQL test a schema of its own in the
// database that TENAX_TEST_POSTGRES names, dropped when the test ends, so
// that tests running at once, and runs after one another, never see each
// other's jobs, queues or workers. The store, worker and CLI tests share
// it.
package pgtest
