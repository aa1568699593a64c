//go:build !linux

package jsonl

import "os"

// Without posix_fadvise (macOS has none), a long read goes without hints.

func adviseSequential(*os.File, int64, int64) {}

func adviseDontNeed(*os.File, int64, int64) {}

func cachedWhole(*os.File, int64, int64) bool { return false }
