package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The interface task/llm consumes; a *Cache must satisfy it.
var _ interface {
	Get(key string) ([]byte, bool, error)
	Put(key string, value []byte) error
} = (*Cache)(nil)

func openTemp(t *testing.T) *Cache {
	t.Helper()
	c, err := Open(filepath.Join(t.TempDir(), "cache"), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mustKey(t *testing.T, v any) string {
	t.Helper()
	k, err := Key(v)
	if err != nil {
		t.Fatalf("Key(%v): %v", v, err)
	}
	return k
}

func TestPutThenGetReturnsTheSameBytes(t *testing.T) {
	tests := []struct {
		name  string
		value []byte
	}{
		{"compact JSON", []byte(`{"es":"hola"}`)},
		{"JSON with spacing and HTML characters", []byte("{\n  \"html\": \"<b>&</b>\"\n}")},
		{"JSON null", []byte(`null`)},
		{"plain text", []byte("not JSON at all")},
		{"binary", []byte{0xff, 0x00, 0xfe}},
		{"empty", []byte{}},
	}
	c := openTemp(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := mustKey(t, i)
			if err := c.Put(key, tt.value); err != nil {
				t.Fatalf("Put: %v", err)
			}
			got, ok, err := c.Get(key)
			if err != nil || !ok {
				t.Fatalf("Get = %q, %v, %v; want a hit", got, ok, err)
			}
			if !bytes.Equal(got, tt.value) {
				t.Errorf("Get = %q, want %q", got, tt.value)
			}
		})
	}
}

func TestEntriesLiveInOneLogNotAFileEach(t *testing.T) {
	c := openTemp(t)
	for i := range 200 {
		if err := c.Put(mustKey(t, i), []byte(`"answer"`)); err != nil {
			t.Fatal(err)
		}
	}
	names, err := os.ReadDir(c.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0].Name() != LogName {
		var got []string
		for _, n := range names {
			got = append(got, n.Name())
		}
		t.Errorf("the cache directory holds %q after 200 Puts, want only %s", got, LogName)
	}
}

func TestPutReplacesAnEntry(t *testing.T) {
	c := openTemp(t)
	key := mustKey(t, "k")
	for _, v := range []string{`1`, `2`} {
		if err := c.Put(key, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if got, _, _ := c.Get(key); string(got) != `2` {
		t.Errorf("Get = %q after two Puts, want the last value 2", got)
	}
}

func TestGetOfAnUnknownKeyMisses(t *testing.T) {
	c := openTemp(t)
	got, ok, err := c.Get(mustKey(t, "never stored"))
	if ok || err != nil || got != nil {
		t.Errorf("Get = %q, %v, %v; want a clean miss", got, ok, err)
	}
}

func TestBadKeysAreRefused(t *testing.T) {
	c := openTemp(t)
	for _, key := range []string{
		"",
		"abc",                          // too short
		"../../../../etc/passwd",       // traversal
		"0123456789abcdef/../../x",     // hex prefix, then traversal
		"0123456789ABCDEF0123",         // uppercase
		"0123456789abcdeg",             // not hex
		"rejected0123456789abcdef0000", // the rejected directory
		strings.Repeat("a", maxKey+1),  // longer than a record holds
	} {
		if _, _, err := c.Get(key); !errors.Is(err, ErrBadKey) {
			t.Errorf("Get(%q) error = %v, want ErrBadKey", key, err)
		}
		if err := c.Put(key, []byte(`1`)); !errors.Is(err, ErrBadKey) {
			t.Errorf("Put(%q) error = %v, want ErrBadKey", key, err)
		}
		if err := c.Reject(key, "r"); !errors.Is(err, ErrBadKey) {
			t.Errorf("Reject(%q) error = %v, want ErrBadKey", key, err)
		}
	}
	if _, _, err := c.Get(strings.Repeat("a", minKeyLen)); err != nil {
		t.Errorf("Get of a %d-digit key: %v, want it accepted", minKeyLen, err)
	}
}

func TestRejectKeepsTheEntryAndTheNextGetMisses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := openTemp(t)
		key := mustKey(t, map[string]any{"model": "m", "prompt": "p"})
		if err := c.Put(key, []byte(`{"en":"hello"}`)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(90 * time.Second) // fake time: the rejection comes later
		if err := c.Reject(key, "at root: missing property 'es'"); err != nil {
			t.Fatalf("Reject: %v", err)
		}
		if got, ok, err := c.Get(key); ok || err != nil {
			t.Errorf("Get after Reject = %q, %v, %v; want a miss", got, ok, err)
		}
		data, err := os.ReadFile(filepath.Join(c.Dir(), "rejected", key+".json"))
		if err != nil {
			t.Fatalf("rejected entry: %v", err)
		}
		var kept struct {
			Key        string          `json:"key"`
			Value      json.RawMessage `json:"value"`
			Reason     string          `json:"reason"`
			RejectedAt time.Time       `json:"rejected_at"`
		}
		if err := json.Unmarshal(data, &kept); err != nil {
			t.Fatalf("rejected entry %q: %v", data, err)
		}
		if kept.Key != key || string(kept.Value) != `{"en":"hello"}` || kept.Reason != "at root: missing property 'es'" {
			t.Errorf("rejected entry = %+v, want the key, the value and the reason", kept)
		}
		if want := time.Date(2000, 1, 1, 0, 1, 30, 0, time.UTC); !kept.RejectedAt.Equal(want) {
			t.Errorf("rejected_at = %v, want %v (the time of Reject)", kept.RejectedAt, want)
		}
	})
}

func TestRejectOfAMissingEntryDoesNothing(t *testing.T) {
	c := openTemp(t)
	key := mustKey(t, "gone")
	if err := c.Reject(key, "invalid"); err != nil {
		t.Fatalf("Reject of a missing entry: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.Dir(), "rejected", key+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Reject kept something for an entry that did not exist (stat: %v)", err)
	}
}

func TestRejectKeepsANonJSONValueAsBase64(t *testing.T) {
	c := openTemp(t)
	key := mustKey(t, "text")
	if err := c.Put(key, []byte("Hola")); err != nil {
		t.Fatal(err)
	}
	if err := c.Reject(key, "output is not JSON"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(c.Dir(), "rejected", key+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var kept entry
	if err := json.Unmarshal(data, &kept); err != nil {
		t.Fatal(err)
	}
	if v, ok := kept.value(key); !ok || string(v) != "Hola" {
		t.Errorf("rejected value = %q, %v; want Hola from value_base64 (file %s)", v, ok, data)
	}
}

func TestConcurrentPutAndGetSeeWholeEntries(t *testing.T) {
	c := openTemp(t)
	keys := []string{mustKey(t, "a"), mustKey(t, "b"), mustKey(t, "c")}
	value := func(writer, round int) []byte {
		return fmt.Appendf(nil, `{"writer":%d,"round":%d,"pad":"%s"}`, writer, round, strings.Repeat("x", 4096))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Go(func() {
			for round := range 50 {
				if err := c.Put(keys[round%len(keys)], value(w, round)); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			for round := range 100 {
				got, ok, err := c.Get(keys[round%len(keys)])
				if err != nil {
					errs <- err
					return
				}
				if ok && !json.Valid(got) {
					errs <- fmt.Errorf("Get returned a partial entry: %.40q…", got)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, key := range keys {
		if _, ok, err := c.Get(key); !ok || err != nil {
			t.Errorf("Get(%s) after the writers = %v, %v; want a hit", key, ok, err)
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(c.Dir(), "*", ".tmp-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %q", leftovers)
	}
}

func TestKeyIsStableAndSensitive(t *testing.T) {
	type request struct {
		Model    string            `json:"model"`
		Messages []string          `json:"messages"`
		Params   map[string]string `json:"params"`
	}
	a := request{"m", []string{"hi"}, map[string]string{"x": "1", "y": "2"}}
	b := request{"m", []string{"hi"}, map[string]string{"y": "2", "x": "1"}}
	c := request{"m", []string{"hi!"}, map[string]string{"x": "1", "y": "2"}}
	ka, kb, kc := mustKey(t, a), mustKey(t, b), mustKey(t, c)
	if ka != kb {
		t.Errorf("equal requests with maps built in different orders got keys %s and %s", ka, kb)
	}
	if ka == kc {
		t.Errorf("different messages got the same key %s", ka)
	}
	if len(ka) != 64 || !validKey(ka) {
		t.Errorf("Key = %q, want 64 hex digits", ka)
	}
	if _, err := Key(func() {}); err == nil {
		t.Error("Key of a func succeeded, want an encoding error")
	}
}

func TestOpenFailsOnAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(file, "cache"), Options{}); err == nil {
		t.Error("Open under a regular file succeeded, want an error")
	}
}

func TestTwoCachesOnOneDirectoryShareEntries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	first, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	key := mustKey(t, "shared")
	if err := first.Put(key, []byte(`"from first"`)); err != nil {
		t.Fatal(err)
	}
	if err := first.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := second.Get(key); !ok || string(got) != `"from first"` {
		t.Errorf("second.Get = %q, %v; want the entry the first cache wrote", got, ok)
	}
	if err := second.Reject(key, "bad"); err != nil {
		t.Fatal(err)
	}
	if err := second.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := first.Get(key); ok {
		t.Error("first.Get hit an entry the second cache rejected")
	}
}

// TestAPutIsWrittenWithinFlushDelayAndSyncedWithinSyncInterval pins what
// an entry survives, and when: when Put returns it is in memory only;
// FlushDelay later it is in the log, where another process reads it (it
// survives a kill -9); the log's fsync, which a crash of the machine
// needs, comes once for the batches of one SyncInterval, and at once for
// Flush and Close.
func TestAPutIsWrittenWithinFlushDelayAndSyncedWithinSyncInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "cache")
		var mu sync.Mutex
		syncs := 0
		c, err := open(dir, Options{}, func(f *os.File) error {
			mu.Lock()
			syncs++
			mu.Unlock()
			return f.Sync()
		})
		if err != nil {
			t.Fatal(err)
		}
		inLog := func(key string) bool {
			other, err := Open(dir, Options{}) // as another process would
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			_, ok, err := other.Get(key)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		check := func(when string, key string, wantInLog bool, wantSyncs int) {
			t.Helper()
			synctest.Wait()
			mu.Lock()
			n := syncs
			mu.Unlock()
			if got := inLog(key); got != wantInLog || n != wantSyncs {
				t.Errorf("%s: entry in the log %v after %d fsyncs, want %v after %d", when, got, n, wantInLog, wantSyncs)
			}
		}
		start := time.Now()
		keys := make([]string, 4)
		for i := range keys {
			keys[i] = mustKey(t, i)
		}
		if err := c.Put(keys[0], []byte(`"zero"`)); err != nil {
			t.Fatal(err)
		}
		check("when Put returns", keys[0], false, 0)
		time.Sleep(FlushDelay)
		check("FlushDelay after the Put", keys[0], true, 0)
		time.Sleep(FlushDelay)
		if err := c.Put(keys[1], []byte(`"one"`)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(FlushDelay)
		check("FlushDelay after a second Put", keys[1], true, 0)
		time.Sleep(time.Until(start.Add(FlushDelay + SyncInterval + time.Millisecond)))
		check("SyncInterval after the first write", keys[1], true, 1)

		if err := c.Put(keys[2], []byte(`"two"`)); err != nil {
			t.Fatal(err)
		}
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		check("when Flush returns", keys[2], true, 2)
		if err := c.Put(keys[3], []byte(`"three"`)); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		check("when Close returns", keys[3], true, 3)
	})
}
