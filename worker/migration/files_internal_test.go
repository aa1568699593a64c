package migration

import "testing"

// TestMigrationFilesAreNumberedWithoutGaps: the embedded files parse,
// version 1 first (All panics on a malformed set).
func TestMigrationFilesAreNumberedWithoutGaps(t *testing.T) {
	ms := All()
	if len(ms) == 0 || ms[0].Version != 1 || ms[0].Name != "coordination" {
		t.Fatalf("embedded migrations: %+v, want version 1 named coordination first", ms)
	}
}
