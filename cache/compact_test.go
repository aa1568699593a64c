package cache

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// logSize returns the size of the log in dir.
func logSize(t *testing.T, dir string) int64 {
	t.Helper()
	info, err := os.Stat(filepath.Join(dir, LogName))
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

func TestALogOverItsBoundKeepsTheNewestEntries(t *testing.T) {
	const n, bound = 400, 64 << 10
	dir := filepath.Join(t.TempDir(), "cache")
	c, err := Open(dir, Options{MaxBytes: bound})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	value := func(i int) []byte { return fmt.Appendf(nil, `{"i":%d,"pad":%q}`, i, bytes.Repeat([]byte("p"), 900)) }
	for i := range n {
		if err := c.Put(helperKey("b", i), value(i)); err != nil {
			t.Fatal(err)
		}
		if i%20 == 19 {
			if err := c.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	// The compaction runs in the background: poll for it.
	deadline := time.Now().Add(30 * time.Second)
	for logSize(t, dir) > bound && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if size := logSize(t, dir); size > bound {
		t.Fatalf("the log is %d bytes after %d entries of ~1 KB, over its bound of %d: no compaction ran", size, n, bound)
	}
	// The newest entries are kept whole, the oldest gone.
	if got, ok, _ := c.Get(helperKey("b", n-1)); !ok || !bytes.Equal(got, value(n-1)) {
		t.Errorf("the newest entry reads %.30q, %v after the compaction", got, ok)
	}
	if _, ok, _ := c.Get(helperKey("b", 0)); ok {
		t.Error("the oldest entry is still there, in a log bounded to a sixth of what was put")
	}
	other, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	kept := 0
	for i := range n {
		got, ok, _ := other.Get(helperKey("b", i))
		if ok && !bytes.Equal(got, value(i)) {
			t.Fatalf("entry %d reads %.30q after the compaction, not what was put", i, got)
		}
		if ok {
			kept++
		} else if kept > 0 {
			t.Fatalf("entry %d is gone though an older one, put before it, was kept", i)
		}
	}
	if kept == 0 {
		t.Error("a fresh opener finds no entry: the compaction kept nothing")
	}
}

func TestPruneDropsWhatIsOverTheBoundOrOlderThanTheCut(t *testing.T) {
	tests := []struct {
		name     string
		maxBytes int64
		cut      func(times []int64) time.Time
		keep     func(i int) bool
	}{
		{"a bound of three records", 0, nil, func(i int) bool { return i >= 7 }},
		{"older than the sixth entry", -1, func(ts []int64) time.Time { return time.UnixMilli(ts[6]) }, func(i int) bool { return i >= 6 }},
		{"no bound, no cut", -1, nil, func(int) bool { return true }},
	}
	const n = 10
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			c, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var times []int64
			var recSize int64
			for i := range n {
				if err := c.Put(helperKey("p", i), []byte(`"same size"`)); err != nil {
					t.Fatal(err)
				}
				if err := c.Flush(); err != nil {
					t.Fatal(err)
				}
				c.mu.Lock()
				l := c.index[hashOf(c, helperKey("p", i))]
				c.mu.Unlock()
				times, recSize = append(times, l.at), int64(l.size)
				time.Sleep(2 * time.Millisecond) // each its own millisecond, for the cut
			}
			maxBytes, cut := tt.maxBytes, time.Time{}
			if maxBytes == 0 {
				maxBytes = 3 * recSize
			}
			if tt.cut != nil {
				cut = tt.cut(times)
			}
			p, err := c.Prune(maxBytes, cut)
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if _, ok, _ := c.Get(helperKey("p", i)); ok != tt.keep(i) {
					t.Errorf("after Prune entry %d is there: %v, want %v", i, ok, tt.keep(i))
				}
			}
			if p.EntriesBefore != n || p.BytesAfter != logSize(t, dir) {
				t.Errorf("Prune reports %+v; want %d entries before and the log's %d bytes after", p, n, logSize(t, dir))
			}
		})
	}
}

// hashOf is key's hash in c's index.
func hashOf(c *Cache, key string) uint64 {
	return maphash.String(c.seed, key)
}

func TestClearEmptiesTheCacheAndItTakesNewEntries(t *testing.T) {
	c := openTemp(t)
	putN(t, c, "c", 50)
	if err := c.Reject(helperKey("c", 3), "bad"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Clear(); err != nil {
		t.Fatal(err)
	}
	s, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.Entries != 0 || s.LogBytes != 0 || s.Rejected != 0 {
		t.Errorf("after Clear the stats are %+v, want nothing", s)
	}
	if err := c.Put(helperKey("c", 0), []byte(`1`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := c.Get(helperKey("c", 0)); !ok || string(got) != "1" {
		t.Errorf("a Put after Clear reads %q, %v", got, ok)
	}
}

// putN puts n entries named prefix and flushes them.
func putN(t *testing.T, c *Cache, prefix string, n int) {
	t.Helper()
	for i := range n {
		if err := c.Put(helperKey(prefix, i), helperValue(prefix, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestStatsCountTheEntriesAndTheirTimes(t *testing.T) {
	c := openTemp(t)
	before := time.Now().Add(-time.Millisecond)
	putN(t, c, "s", 20)
	putN(t, c, "s", 5) // replaced, not counted twice
	s, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.Entries != 20 || s.Bytes <= 0 || s.LogBytes <= s.Bytes {
		t.Errorf("stats %+v; want 20 entries, and a log larger than they are (5 were replaced)", s)
	}
	if s.Oldest.Before(before) || s.Newest.Before(s.Oldest) || time.Since(s.Newest) > time.Minute {
		t.Errorf("oldest %v, newest %v; want both since %v, in order", s.Oldest, s.Newest, before)
	}
}

// TestACompactionInAnotherOpenerLosesNoWrite: one opener compacts the
// log again and again while another writes to it; every entry the writer
// flushed is in the log at the end, written to the new file once the old
// one was replaced.
func TestACompactionInAnotherOpenerLosesNoWrite(t *testing.T) {
	const n = 300
	dir := filepath.Join(t.TempDir(), "cache")
	writer, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	compactor, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := compactor.Prune(-1, time.Time{}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for i := range n {
		if err := writer.Put(helperKey("w", i), helperValue("w", i)); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			if err := writer.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	wg.Wait()
	if err := writer.Close(); err != nil {
		t.Fatal(err)
	}
	compactor.Close()
	c, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range n {
		if got, ok, _ := c.Get(helperKey("w", i)); !ok || !bytes.Equal(got, helperValue("w", i)) {
			t.Fatalf("entry %d, flushed while another opener compacted, reads %.30q, %v", i, got, ok)
		}
	}
}

// TestACompactionKilledAtAnyPointLeavesTheLogWhole: a process compacting
// a log over and over is killed (-9); the next Open finds every entry,
// and no compaction file left behind.
func TestACompactionKilledAtAnyPointLeavesTheLogWhole(t *testing.T) {
	const n = 3000
	dir := filepath.Join(t.TempDir(), "cache")
	putAll(t, dir, n)
	for round := range 4 {
		cmd := helper(t, "compact-forever", dir, "")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		for range round + 1 {
			if !lines.Scan() {
				t.Fatal("the compacting child stopped before it was killed")
			}
		}
		time.Sleep(time.Duration(round) * 3 * time.Millisecond) // somewhere in the next compaction
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		c, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("round %d: Open after a compaction was killed: %v", round, err)
		}
		if _, err := os.Stat(filepath.Join(dir, compactName)); !os.IsNotExist(err) {
			t.Errorf("round %d: the killed compaction's file is still there after Open (%v)", round, err)
		}
		for i := range n {
			if got, ok, _ := c.Get(helperKey("k", i)); !ok || !bytes.Equal(got, helperValue("k", i)) {
				t.Fatalf("round %d: entry %d reads %.30q, %v after a compaction was killed", round, i, got, ok)
			}
		}
		c.Close()
	}
}

// compactForever is the "compact-forever" child: it rewrites the log
// keeping everything, printing a line after each, until killed.
func compactForever(dir string) error {
	c, err := Open(dir, Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	for i := 0; ; i++ {
		if _, err := c.Prune(-1, time.Time{}); err != nil {
			return err
		}
		fmt.Println(strconv.Itoa(i))
	}
}
