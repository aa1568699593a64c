package store

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
)

// TestSyncDirToleratesFileSystemsThatCannotSyncDirectories: store/jsonl had
// its own copy of syncDir that failed on such file systems while the export
// path's tolerated them; both now use SyncDir.
func TestSyncDirToleratesFileSystemsThatCannotSyncDirectories(t *testing.T) {
	tests := []struct {
		err      error
		tolerate bool
	}{
		{os.ErrInvalid, true},
		{&fs.PathError{Op: "sync", Path: "/d", Err: syscall.EINVAL}, true},
		{fmt.Errorf("wrapped: %w", syscall.EINVAL), true},
		{&fs.PathError{Op: "sync", Path: "/d", Err: syscall.EIO}, false},
		{&fs.PathError{Op: "sync", Path: "/d", Err: syscall.ENOSPC}, false},
	}
	for _, tt := range tests {
		if got := cannotSyncDir(tt.err); got != tt.tolerate {
			t.Errorf("cannotSyncDir(%v) = %v, want %v", tt.err, got, tt.tolerate)
		}
	}
	if err := SyncDir(t.TempDir()); err != nil {
		t.Errorf("SyncDir of a fresh temp directory: %v", err)
	}
	if err := SyncDir(t.TempDir() + "/missing"); err == nil {
		t.Errorf("SyncDir of a missing directory succeeded, want its error")
	}
}
