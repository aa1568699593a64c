package cache

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// helperEnv, when set, makes TestHelperProcess a child process that works
// on a cache (see helperMain) instead of a test.
const helperEnv = "TENAX_CACHE_HELPER"

// TestHelperProcess is not a test: the tests below run the test binary
// again with helperEnv set, as a second process sharing a cache.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("a child process of the tests below")
	}
	if err := helperMain(mode, os.Getenv("TENAX_CACHE_DIR"), os.Getenv("TENAX_CACHE_PREFIX")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// helperKey is the key of entry i of the writer named prefix.
func helperKey(prefix string, i int) string {
	k, _ := Key(prefix + strconv.Itoa(i))
	return k
}

// helperValue is entry i's value: sized from a few bytes to 16 KB, so a
// kill often lands in the middle of a write.
func helperValue(prefix string, i int) []byte {
	return fmt.Appendf(nil, `{"writer":%q,"i":%d,"pad":%q}`, prefix, i, strings.Repeat("x", (i*7919)%(16<<10)))
}

// helperMain is the child's work. "write-forever" puts entries, and after
// every few a Flush prints the number of the last one acknowledged, until
// killed; "write-and-read N" puts N entries, reading each back and one of
// the other writer's; "compact-forever" is compactForever.
func helperMain(mode, dir, prefix string) error {
	if mode == "compact-forever" {
		return compactForever(dir)
	}
	c, err := Open(dir, Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	out := bufio.NewWriter(os.Stdout)
	switch {
	case mode == "write-forever":
		for i := 0; ; i++ {
			if err := c.Put(helperKey(prefix, i), helperValue(prefix, i)); err != nil {
				return err
			}
			if i%7 != 6 {
				continue
			}
			if err := c.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(out, i)
			out.Flush()
		}
	case strings.HasPrefix(mode, "write-and-read "):
		n, err := strconv.Atoi(strings.TrimPrefix(mode, "write-and-read "))
		if err != nil {
			return err
		}
		other := os.Getenv("TENAX_CACHE_OTHER")
		seen := 0
		for i := range n {
			key := helperKey(prefix, i)
			if err := c.Put(key, helperValue(prefix, i)); err != nil {
				return err
			}
			got, ok, err := c.Get(key)
			if err != nil || !ok || !bytes.Equal(got, helperValue(prefix, i)) {
				return fmt.Errorf("%s: Get of its own entry %d = %.40q, %v, %v", prefix, i, got, ok, err)
			}
			if v, ok, err := c.Get(helperKey(other, i)); err != nil {
				return err
			} else if ok {
				if !bytes.Equal(v, helperValue(other, i)) {
					return fmt.Errorf("%s: entry %d of %s reads %.40q, not what it wrote", prefix, i, other, v)
				}
				seen++
			}
		}
		fmt.Fprintln(out, "seen", seen)
		return out.Flush()
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

// helper returns the command of a child process working on dir.
func helper(t *testing.T, mode, dir, prefix string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "TENAX_CACHE_DIR="+dir, "TENAX_CACHE_PREFIX="+prefix)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// TestAKilledWriterLosesNothingAcknowledgedAndTheLogStaysReadable: a
// writer killed (-9) at any point loses no entry a Flush acknowledged,
// its batches being written whole or torn at the end; the next Open cuts
// the torn tail, and the log takes new entries.
func TestAKilledWriterLosesNothingAcknowledgedAndTheLogStaysReadable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	for round := range 3 {
		prefix := fmt.Sprintf("round%d-", round)
		cmd := helper(t, "write-forever", dir, prefix)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill it at a different point each round, mid-write as often
		// as not: its values run up to 16 KB.
		lines := bufio.NewScanner(stdout)
		confirmed := -1
		for confirmed < 60+round*23 && lines.Scan() {
			if confirmed, err = strconv.Atoi(lines.Text()); err != nil {
				t.Fatalf("child said %q", lines.Text())
			}
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		for lines.Scan() {
			confirmed, _ = strconv.Atoi(lines.Text())
		}
		_ = cmd.Wait()
		if confirmed < 0 {
			t.Fatal("the child confirmed no Put before it was killed")
		}

		c, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("round %d: reopening after kill -9: %v", round, err)
		}
		if data, err := os.ReadFile(filepath.Join(dir, LogName)); err != nil {
			t.Fatal(err)
		} else if end := lastRecordEnd(data); end != int64(len(data)) {
			t.Fatalf("round %d: after Open the log is %d bytes, its last whole record ends at %d: the torn tail was not cut", round, len(data), end)
		}
		for r := 0; r <= round; r++ {
			p := fmt.Sprintf("round%d-", r)
			last := confirmed
			if r < round {
				last = 60 + r*23 // at least this many were confirmed that round
			}
			for i := 0; i <= last; i++ {
				got, ok, err := c.Get(helperKey(p, i))
				if err != nil || !ok || !bytes.Equal(got, helperValue(p, i)) {
					t.Fatalf("round %d: entry %d of %s, confirmed before the kill, reads %.40q, %v, %v", round, i, p, got, ok, err)
				}
			}
		}
		// Whatever the kill tore, a Put after it is seen, now and after a reopen.
		key := helperKey("after-kill", round)
		if err := c.Put(key, []byte(`"after"`)); err != nil {
			t.Fatal(err)
		}
		if got, ok, _ := c.Get(key); !ok || string(got) != `"after"` {
			t.Errorf("round %d: a Put after the kill reads %q, %v; want it back", round, got, ok)
		}
		c.Close()
		c, err = Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got, ok, _ := c.Get(key); !ok || string(got) != `"after"` {
			t.Errorf("round %d: after a reopen, the Put after the kill reads %q, %v", round, got, ok)
		}
		c.Close()
	}
}

func TestTwoProcessesWriteAndReadOneCacheAtOnce(t *testing.T) {
	const n = 200
	dir := filepath.Join(t.TempDir(), "cache")
	mode := "write-and-read " + strconv.Itoa(n)
	a := helper(t, mode, dir, "a", "TENAX_CACHE_OTHER=b")
	b := helper(t, mode, dir, "b", "TENAX_CACHE_OTHER=a")
	var outA, outB bytes.Buffer
	a.Stdout, b.Stdout = &outA, &outB
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	errA, errB := a.Wait(), b.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("the two writers failed: %v, %v", errA, errB)
	}
	t.Logf("a saw %s of b's entries as it went; b saw %s of a's", strings.TrimSpace(outA.String()), strings.TrimSpace(outB.String()))
	c, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{"a", "b"} {
		for i := range n {
			if got, ok, err := c.Get(helperKey(p, i)); err != nil || !ok || !bytes.Equal(got, helperValue(p, i)) {
				t.Fatalf("entry %d of writer %s reads %.40q, %v, %v after both finished", i, p, got, ok, err)
			}
		}
	}
}

func TestManyOpenersInOneProcessShareEntries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	const openers, n = 4, 100
	var wg sync.WaitGroup
	errs := make(chan error, openers)
	for o := range openers {
		wg.Go(func() {
			c, err := Open(dir, Options{})
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			p := strconv.Itoa(o)
			for i := range n {
				if err := c.Put(helperKey(p, i), helperValue(p, i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for o := range openers {
		p := strconv.Itoa(o)
		for i := range n {
			if got, ok, _ := c.Get(helperKey(p, i)); !ok || !bytes.Equal(got, helperValue(p, i)) {
				t.Fatalf("entry %d of opener %d reads %.40q, %v", i, o, got, ok)
			}
		}
	}
}

// putAll puts value i under key i for i in [0, n) and closes the cache.
func putAll(t *testing.T, dir string, n int) {
	t.Helper()
	c, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := c.Put(helperKey("k", i), helperValue("k", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDamagedBytesCostOnlyTheirEntries(t *testing.T) {
	tests := []struct {
		name string
		// damage changes the log, whose records are at offs, and returns
		// the entries that may be lost.
		damage func(t *testing.T, path string, offs []int64) []int
	}{
		{"a torn last write", func(t *testing.T, path string, offs []int64) []int {
			if err := os.Truncate(path, offs[len(offs)-1]+20); err != nil {
				t.Fatal(err)
			}
			return []int{len(offs) - 1}
		}},
		{"a zeroed block in the middle", func(t *testing.T, path string, offs []int64) []int {
			overwrite(t, path, offs[3]+5, make([]byte, 300))
			lost := []int{}
			for i := range offs {
				if offs[i] < offs[3]+305 && (i+1 == len(offs) || offs[i+1] > offs[3]+5) {
					lost = append(lost, i)
				}
			}
			return lost
		}},
		{"a flipped byte in a value", func(t *testing.T, path string, offs []int64) []int {
			overwrite(t, path, offs[5]+recordHeader+70, []byte{'#'})
			return []int{5}
		}},
		{"a length that claims a gigabyte", func(t *testing.T, path string, offs []int64) []int {
			b := binary.LittleEndian.AppendUint32(nil, 1<<30)
			overwrite(t, path, offs[2]+4, b)
			return []int{2}
		}},
		{"garbage appended", func(t *testing.T, path string, offs []int64) []int {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write([]byte("TXC1\xff\xff\x00\x00garbage")); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
	}
	const n = 10
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			putAll(t, dir, n)
			path := filepath.Join(dir, LogName)
			offs := recordOffsets(t, path)
			if len(offs) != n {
				t.Fatalf("the log holds %d records, want %d", len(offs), n)
			}
			lost := map[int]bool{}
			for _, i := range tt.damage(t, path, offs) {
				lost[i] = true
			}
			c, err := Open(dir, Options{})
			if err != nil {
				t.Fatalf("Open of a damaged log: %v", err)
			}
			defer c.Close()
			for i := range n {
				got, ok, err := c.Get(helperKey("k", i))
				if err != nil {
					t.Fatalf("Get %d: %v", i, err)
				}
				if ok && !bytes.Equal(got, helperValue("k", i)) {
					t.Fatalf("entry %d reads %.40q, not what was put", i, got)
				}
				if !ok && !lost[i] {
					t.Errorf("entry %d was lost; only %v were damaged", i, lost)
				}
			}
			// The log takes new entries after the damage, seen now and
			// by the next opener.
			key := helperKey("new", 0)
			if err := c.Put(key, []byte(`"new"`)); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := c.Get(key); !ok {
				t.Error("a Put after the damage is not seen by its own cache")
			}
			if err := c.Flush(); err != nil {
				t.Fatal(err)
			}
			again, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			if got, ok, _ := again.Get(key); !ok || string(got) != `"new"` {
				t.Errorf("a Put after the damage reads %q, %v in a new opener", got, ok)
			}
		})
	}
}

// overwrite writes b at off in path.
func overwrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// recordOffsets returns where each whole record of the log at path starts.
func recordOffsets(t *testing.T, path string) []int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	scan(data, 0, int64(len(data)), func(_ record, off int64, _ int) { offs = append(offs, off) })
	return offs
}

// lastRecordEnd returns where the last whole record of a log ends.
func lastRecordEnd(data []byte) int64 {
	var end int64
	scan(data, 0, int64(len(data)), func(_ record, off int64, size int) { end = off + int64(size) })
	return end
}

func TestOpenCutsATornTail(t *testing.T) {
	const n = 5
	dir := filepath.Join(t.TempDir(), "cache")
	putAll(t, dir, n)
	path := filepath.Join(dir, LogName)
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	torn := appendRecord(nil, opPut, helperKey("torn", 0), helperValue("torn", 1000), 1)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(torn[:len(torn)/2]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(path); err != nil || info.Size() != int64(len(whole)) {
		t.Fatalf("after Open the log is %v bytes (%v), want %d: the half record a killed writer left is still there", info.Size(), err, len(whole))
	}
	key := helperKey("after", 0)
	if err := c.Put(key, []byte(`"after"`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := len(recordOffsets(t, path)); got != n+1 {
		t.Errorf("the log holds %d whole records after a Put, want %d: the Put did not land where the torn tail began", got, n+1)
	}
}

func TestARecordLongerThanTheScanBufferIsRead(t *testing.T) {
	c := openTemp(t)
	big := bytes.Repeat([]byte("y"), 3*scanBufSize+17)
	key := mustKey(t, "big")
	if err := c.Put(key, big); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	other, err := Open(c.Dir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if got, ok, _ := other.Get(key); !ok || !bytes.Equal(got, big) {
		t.Errorf("a %d-byte entry reads %d bytes, %v in another opener", len(big), len(got), ok)
	}
}

func TestUseAfterCloseIsAnError(t *testing.T) {
	c := openTemp(t)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	key := mustKey(t, "x")
	if err := c.Put(key, []byte(`1`)); err == nil {
		t.Error("Put after Close succeeded")
	}
	if _, _, err := c.Get(key); err == nil {
		t.Error("Get after Close succeeded")
	}
	if err := c.Close(); err != nil {
		t.Errorf("a second Close: %v, want nil", err)
	}
}

// FuzzScan: whatever bytes a log holds, a scan neither panics nor reports
// a record that is not whole, and it accounts for every byte up to the
// last record that could still be being written.
func FuzzScan(f *testing.F) {
	var log []byte
	log = appendRecord(log, opPut, "0123456789abcdef", []byte(`{"a":1}`), 1)
	log = appendRecord(log, opDelete, "0123456789abcdef", nil, 0)
	f.Add(log, int64(0))
	f.Add(log[:len(log)-3], int64(len(log)))
	f.Add(append([]byte("TXC1\x00\x00\x00\x40"), log...), int64(8))
	f.Add([]byte("TXC1TXC1TXC1"), int64(12))
	f.Fuzz(func(t *testing.T, data []byte, final int64) {
		consumed, _ := scan(data, 0, final, func(r record, off int64, size int) {
			if _, ok := parseRecord(data[off : off+int64(size)]); !ok {
				t.Fatalf("scan applied the bytes at %d, which are no record", off)
			}
			if !validKeyLen(r.key) {
				t.Fatalf("scan applied a record with a %d-byte key", len(r.key))
			}
		})
		if consumed < 0 || consumed > len(data) {
			t.Fatalf("scan consumed %d of %d bytes", consumed, len(data))
		}
		// Before final every byte is final: the scan accounts for all of them.
		if final == int64(len(data)) && consumed != len(data) {
			t.Fatalf("scan consumed %d of %d final bytes", consumed, len(data))
		}
	})
}

func validKeyLen(k string) bool { return len(k) <= maxKey }
