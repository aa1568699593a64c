package job

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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

// TestACorruptNewestManifestIsNotResolvedToAnOlderJob: with the newest
// manifest corrupt, `export latest` exported an older job and `resume
// NAME` re-ran another job's items. A ref that the broken job may be
// meant by is an error naming it; one that it cannot be is resolved.
func TestACorruptNewestManifestIsNotResolvedToAnOlderJob(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	st := &jsonl.Store{Home: home}
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var ids []string
	for i, name := range []string{"translate", "review", "translate", "summarize"} {
		j, err := st.Create(ctx, store.Manifest{Name: name, Created: base.Add(time.Duration(i) * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.Manifest().ID)
		j.Close()
	}
	corrupt := func(id string) {
		if err := os.WriteFile(filepath.Join(home, "jobs", id, "manifest.json"), []byte(`{"id": "`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	corrupt(ids[2]) // the newest "translate"
	corrupt(ids[3]) // the newest job
	cases := []struct {
		ref    string
		want   string // the id, or "" for an error naming broken
		broken string
	}{
		{"latest", "", ids[3]},
		{"", "", ids[3]},
		{"translate", "", ids[2]},
		{"nosuchname", "", ids[3]},
		{"review", "", ids[2]}, // the broken ones are newer: either may be a "review"
		{ids[0], ids[0], ""},
		{ids[2], "", ids[2]},
	}
	for _, c := range cases {
		got, err := ResolveID(ctx, st, c.ref)
		if c.want != "" {
			if err != nil || got != c.want {
				t.Errorf("ResolveID(%q) = %q, %v; want %q", c.ref, got, err, c.want)
			}
			continue
		}
		var ue *store.UnreadableJobsError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.broken) {
			t.Errorf("ResolveID(%q) = %q, %v; want an error naming the broken job %s", c.ref, got, err, c.broken)
		}
	}
}

// TestAnOlderCorruptManifestStandsInTheWayOfNoNewerJob: a broken job older
// than the one a ref means cannot be that job.
func TestAnOlderCorruptManifestStandsInTheWayOfNoNewerJob(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	st := &jsonl.Store{Home: home}
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var ids []string
	for i, name := range []string{"translate", "translate", "review"} {
		j, err := st.Create(ctx, store.Manifest{Name: name, Created: base.Add(time.Duration(i) * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.Manifest().ID)
		j.Close()
	}
	if err := os.WriteFile(filepath.Join(home, "jobs", ids[0], "manifest.json"), []byte(`{`), 0o600); err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]string{"latest": ids[2], "translate": ids[1], "review": ids[2]} {
		if got, err := ResolveID(ctx, st, ref); err != nil || got != want {
			t.Errorf("ResolveID(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
}
