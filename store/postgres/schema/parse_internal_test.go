package schema

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestParseRefusesAGapAMissingHalfOrAStrayName: a set of migration
// files with a gap, a missing half or a stray name is refused before it
// reaches a database.
func TestParseRefusesAGapAMissingHalfOrAStrayName(t *testing.T) {
	file := &fstest.MapFile{Data: []byte("SELECT 1")}
	for _, tc := range []struct {
		name  string
		files []string
		want  string // in the error; "" for none
	}{
		{"two versions", []string{"001_a.up.sql", "001_a.down.sql", "002_b.up.sql", "002_b.down.sql"}, ""},
		{"a gap", []string{"001_a.up.sql", "001_a.down.sql", "003_c.up.sql", "003_c.down.sql"}, "version 2 is missing"},
		{"no down", []string{"001_a.up.sql"}, "needs both an up and a down"},
		{"two names", []string{"001_a.up.sql", "001_b.down.sql"}, "its name differs"},
		{"no name", []string{"001.up.sql"}, "want NNN_name"},
		{"another suffix", []string{"001_a.sideways.sql"}, "want NNN_name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for _, f := range tc.files {
				fsys[f] = file
			}
			_, err := parse(fsys)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("parse(%v): %v, want no error", tc.files, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("parse(%v): %v, want an error saying %q", tc.files, err, tc.want)
			}
		})
	}
}
