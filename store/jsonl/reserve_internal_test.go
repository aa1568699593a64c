package jsonl

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/store"
)

// smallDisk mounts a tmpfs of size bytes; it skips where that needs a
// root it does not have.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v: %s); run as root on Linux (as CI does) to test a full disk", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fillTo writes into dir until not one more byte fits: whole pages first,
// then single bytes into the last page.
func fillTo(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, chunk := range []int{4096, 1} {
		b := make([]byte, chunk)
		for {
			if _, err := f.Write(b); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling the disk: %v", err)
				}
				break
			}
		}
	}
}

// TestManifestIsSavedOnADiskFilledToTheLastBlock: on a disk filled to
// its last block the new manifest's temporary file could not be created,
// so a run stopped by the full disk left its job saying "running" instead
// of storage_failed (TestSummaryAfterAFullDiskCountsTheWrittenRecords
// failed whenever the log's last write took the last page). The job's
// reserve is given up for that write.
func TestManifestIsSavedOnADiskFilledToTheLastBlock(t *testing.T) {
	home := smallDisk(t, "400k")
	s := &Store{Home: home, FlushEvery: 1 << 20, FlushInterval: time.Hour}
	sj, err := s.Create(t.Context(), store.Manifest{State: store.StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	j := sj.(*Job)
	t.Cleanup(func() { _ = j.Close() })
	fillTo(t, home)
	if err := j.SetState(t.Context(), store.StateStorageFailed); err != nil {
		t.Fatalf("saving the state on a full disk: %v", err)
	}
	m, err := readManifest(j.dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.State != store.StateStorageFailed {
		t.Errorf("manifest state on disk %q, want %q", m.State, store.StateStorageFailed)
	}
}

// TestAClosedJobLeavesNoReserve: the reserve is for a job being written;
// a home of many finished jobs must not keep 64 KiB for each.
func TestAClosedJobLeavesNoReserve(t *testing.T) {
	s := &Store{Home: t.TempDir()}
	sj, err := s.Create(t.Context(), store.Manifest{})
	if err != nil {
		t.Fatal(err)
	}
	j := sj.(*Job)
	reserve := filepath.Join(j.dir, reserveFile)
	fi, err := os.Stat(reserve)
	if err != nil {
		t.Fatalf("an open job holds no reserve: %v", err)
	}
	if fi.Size() < reserveBytes {
		t.Errorf("reserve of %d bytes, want %d", fi.Size(), reserveBytes)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(reserve); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Close the reserve is still there (stat: %v)", err)
	}
}
