// Package storetest is the conformance suite every store.Store passes: one
// set of behaviours — ids assigned from the creation time, the latest
// record per idx winning, idx-ordered scans, failures, concurrent appends,
// records surviving a round trip field by field — run against each
// implementation, as a database driver is tested against one suite.
//
// A store's test calls Run with a function that opens a fresh, empty store:
//
//	func TestStoreConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			return &jsonl.Store{Home: t.TempDir()}
//		})
//	}
//
// FullRecord and DiffRecord help a store's own tests check round trips.
package storetest
