package exec

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// endGroups kills every group of left in which a process carries its
// run's token, reading /proc.
func endGroups(left map[int]string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	ours := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		pgid, ok := processGroup(pid)
		if !ok || ours[pgid] {
			continue
		}
		token, wanted := left[pgid]
		if !wanted {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if string(kv) == EnvRun+"="+token {
				ours[pgid] = true
				break
			}
		}
	}
	n := 0
	for pgid := range ours {
		if syscall.Kill(-pgid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// processGroup reads pid's process group from /proc/pid/stat.
func processGroup(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The fields after the parenthesised command: state ppid pgrp …
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 {
		return 0, false
	}
	pgid, err := strconv.Atoi(string(f[2]))
	return pgid, err == nil
}

// SysProcAttr is how tenax starts every command: in a process group of its
// own (so that a timeout or an interrupt ends all it started), and killed
// when tenax dies (Pdeathsig), so that a kill -9 of tenax does not leave it
// running beside the resumed run. Pdeathsig fires when the OS thread that
// started the command ends, not the process: the thread is not locked
// because the Go runtime never ends a thread except one whose goroutine
// exits while locked to it (runtime.LockOSThread), and commands are never
// started from such a goroutine; so the signal comes when tenax dies.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
