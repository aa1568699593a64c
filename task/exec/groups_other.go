//go:build unix && !linux

package exec

import "syscall"

// endGroups cannot tell a group's processes apart without /proc: it ends
// nothing.
func endGroups(map[int]string) int { return 0 }

// SysProcAttr is how tenax starts every command: in a process group of its
// own, so that a timeout or an interrupt ends all it started. (Only Linux
// can have a command killed when tenax dies.)
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
