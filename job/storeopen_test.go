package job

import (
	"testing"

	"github.com/tenaxhq/tenax/store"
)

func TestStoreArgumentHidesThePasswordAndQuotesForTheShell(t *testing.T) {
	for _, tc := range []struct {
		loc  store.Location
		want string
	}{
		{store.Location{Dir: "/srv/tenax"}, "--store /srv/tenax"},
		{store.Location{PostgresURL: "postgres://tenax@db:5432/tenax"}, "--store postgres://tenax@db:5432/tenax"},
		{store.Location{PostgresURL: "postgres://tenax:s3cret@db/tenax?sslmode=disable&search_path=batch"},
			"--store 'postgres://tenax:xxxxx@db/tenax?sslmode=disable&search_path=batch'"},
	} {
		if got := StoreArgument(tc.loc); got != tc.want {
			t.Errorf("StoreArgument(%+v) = %q, want %q", tc.loc, got, tc.want)
		}
	}
}
