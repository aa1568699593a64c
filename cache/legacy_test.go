package cache

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// oldHome lays out a cache of the file-per-entry layout in a new
// directory: n entries, a rejected one, a corrupt file, a write left
// half-done and a file that is not tenax's.
func oldHome(t *testing.T, n int) (dir string, keys []string, corrupt string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "cache")
	for i := range n {
		key := mustKey(t, "old"+strconv.Itoa(i))
		keys = append(keys, key)
		value := []byte(`{"old":` + strconv.Itoa(i) + `}`)
		if i%5 == 0 {
			value = []byte("not JSON\n") // kept as value_base64
		}
		if err := legacyPut(dir, key, value); err != nil {
			t.Fatal(err)
		}
	}
	corrupt = mustKey(t, "corrupt")
	for name, data := range map[string]string{
		filepath.Join(corrupt[:2], corrupt+".json"): `{"key":"` + corrupt + `","value":{"es":"ho`,
		filepath.Join(keys[0][:2], ".tmp-123"):      `{"key":`,
		filepath.Join("rejected", keys[1]+".json"):  `{"key":"` + keys[1] + `","value":1,"reason":"r"}` + "\n",
		"README.txt": "mine",
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, keys, corrupt
}

// oldValue is what oldHome stored as entry i.
func oldValue(i int) []byte {
	if i%5 == 0 {
		return []byte("not JSON\n")
	}
	return []byte(`{"old":` + strconv.Itoa(i) + `}`)
}

func TestOpenMigratesTheFilePerEntryLayout(t *testing.T) {
	const n = 300
	dir, keys, corrupt := oldHome(t, n)
	rejected, err := os.ReadFile(filepath.Join(dir, "rejected", keys[1]+".json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open of an old cache: %v", err)
	}
	defer c.Close()
	for i, key := range keys {
		got, ok, err := c.Get(key)
		if err != nil || !ok || !bytes.Equal(got, oldValue(i)) {
			t.Fatalf("old entry %d reads %q, %v, %v after the migration; want %q", i, got, ok, err, oldValue(i))
		}
	}
	if _, ok, _ := c.Get(corrupt); ok {
		t.Error("a corrupt old entry became a hit")
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range names {
		left = append(left, e.Name())
	}
	want := []string{"README.txt", LogName, "rejected"}
	if len(left) != len(want) || left[0] != want[0] || left[1] != want[1] || left[2] != want[2] {
		t.Errorf("after the migration the directory holds %q, want %q: the entries' directories gone, the rest kept", left, want)
	}
	if kept, err := os.ReadFile(filepath.Join(dir, "rejected", keys[1]+".json")); err != nil || !bytes.Equal(kept, rejected) {
		t.Errorf("the rejected entry changed in the migration: %q, %v", kept, err)
	}

	// A second open finds nothing to migrate and the same entries.
	again, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got, ok, _ := again.Get(keys[n-1]); !ok || !bytes.Equal(got, oldValue(n-1)) {
		t.Errorf("after a second Open, the last old entry reads %q, %v", got, ok)
	}
}

func TestTwoOpenersMigrateOneOldCacheAtOnce(t *testing.T) {
	const n = 200
	dir, keys, _ := oldHome(t, n)
	var wg sync.WaitGroup
	caches := make([]*Cache, 2)
	errs := make([]error, 2)
	for i := range caches {
		wg.Go(func() { caches[i], errs[i] = Open(dir, Options{}) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Open: %v", err)
	}
	for ci, c := range caches {
		defer c.Close()
		for i, key := range keys {
			if got, ok, err := c.Get(key); err != nil || !ok || !bytes.Equal(got, oldValue(i)) {
				t.Fatalf("opener %d: old entry %d reads %q, %v, %v", ci, i, got, ok, err)
			}
		}
	}
}
