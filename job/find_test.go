package job

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// TestResolveIDAcceptsLatestAndNames is the regression test of export and
// resume that needed the full job id: "latest" and a job's name work
// wherever an id does.
func TestResolveIDAcceptsLatestAndNames(t *testing.T) {
	ctx := context.Background()
	st := &jsonl.Store{Home: t.TempDir()}
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var ids []string
	for i, name := range []string{"translate", "review", "translate", ""} {
		j, err := st.Create(ctx, store.Manifest{Name: name, Created: base.Add(time.Duration(i) * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.Manifest().ID)
		j.Close()
	}
	cases := []struct{ ref, want string }{
		{ids[1], ids[1]},
		{"", ids[3]},
		{"latest", ids[3]},
		{"translate", ids[2]},
		{"review", ids[1]},
	}
	for _, c := range cases {
		got, err := ResolveID(ctx, st, c.ref)
		if err != nil || got != c.want {
			t.Errorf("ResolveID(%q) = %q, %v; want %q", c.ref, got, err, c.want)
		}
	}
	_, err := ResolveID(ctx, st, "translat")
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "translate, review") {
		t.Errorf("an unknown name: %v; want a usage error listing the names", err)
	}
}

// TestLocationFlagsFindTheJobAgain: the flags a printed command repeats,
// the password of a --store URL hidden.
func TestLocationFlagsFindTheJobAgain(t *testing.T) {
	for _, c := range []struct{ home, store, want string }{
		{"", "", ""},
		{DefaultHome, "", ""},
		{"h1", "", " --home h1"},
		{"my jobs", "", " --home 'my jobs'"},
		{DefaultHome, "/data/tenax", " --store /data/tenax"},
		{DefaultHome, "postgres://u:secret@db:5432/t", " --store postgres://u:xxxxx@db:5432/t"},
		// A URL's ? and & are the shell's unless quoted.
		{"", "postgres://tenax:s3cret@db/tenax?sslmode=disable&search_path=batch",
			" --store 'postgres://tenax:xxxxx@db/tenax?sslmode=disable&search_path=batch'"},
	} {
		if got := LocationFlags(c.home, c.store); got != c.want {
			t.Errorf("LocationFlags(%q, %q) = %q, want %q", c.home, c.store, got, c.want)
		}
	}
}
