package cache

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// legacyPut and legacyGet are the file-per-entry store tenax used before
// the log, kept to measure the log against it (BenchmarkCachePut/files)
// and to lay out old homes for the migration tests.
func legacyPut(dir, key string, value []byte) error {
	data, err := encode(key, value, "", time.Time{})
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, key[:2], key+".json"), data)
}

func legacyGet(dir, key string) ([]byte, bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, key[:2], key+".json"))
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var e entry
	if json.Unmarshal(data, &e) != nil {
		return nil, false, nil
	}
	v, ok := e.value(key)
	return v, ok, nil
}

// benchValue is the size of a mock-json answer, what a quick-start item
// caches.
var benchValue = []byte(`{"text":"Describe the word 'benchmark' as JSON.","length":46}`)

// benchKeys returns n keys as task/llm makes them.
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i], _ = Key(strconv.Itoa(i))
	}
	return keys
}

// BenchmarkCachePut puts b.N new entries: one file each (files), or one
// record each in the log (log).
func BenchmarkCachePut(b *testing.B) {
	b.Run("store=files", func(b *testing.B) {
		dir := b.TempDir()
		keys := benchKeys(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		defer reportCPU(b)()
		for i := range b.N {
			if err := legacyPut(dir, keys[i], benchValue); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("store=log", func(b *testing.B) {
		c, err := Open(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		keys := benchKeys(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		defer reportCPU(b)()
		for i := range b.N {
			if err := c.Put(keys[i], benchValue); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCacheGet gets entries of a cache holding 10,000, hits and
// misses alternating, as a cached rerun and a new job do.
func BenchmarkCacheGet(b *testing.B) {
	const stored = 10000
	keys := benchKeys(2 * stored)
	b.Run("store=files", func(b *testing.B) {
		dir := b.TempDir()
		for _, k := range keys[:stored] {
			if err := legacyPut(dir, k, benchValue); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		defer reportCPU(b)()
		for i := range b.N {
			k := keys[(i%stored)+stored*(i&1)]
			if _, ok, err := legacyGet(dir, k); err != nil || ok != (i&1 == 0) {
				b.Fatalf("Get %d: %v, %v", i, ok, err)
			}
		}
	})
	b.Run("store=log", func(b *testing.B) {
		c, err := Open(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		for _, k := range keys[:stored] {
			if err := c.Put(k, benchValue); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		defer reportCPU(b)()
		for i := range b.N {
			k := keys[(i%stored)+stored*(i&1)]
			if _, ok, err := c.Get(k); err != nil || ok != (i&1 == 0) {
				b.Fatalf("Get %d: %v, %v", i, ok, err)
			}
		}
	})
}

// reportCPU reports the CPU time (user and system) per op the benchmark
// spent from here on: on a shared machine, wall time per op measures the
// load as much as the code.
func reportCPU(b *testing.B) func() {
	start := cpuTime(b)
	return func() {
		b.ReportMetric(float64((cpuTime(b)-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
