package exec

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Exec children outlived kill -9 of tenax: started with Setpgid and no
// death signal, they were reparented to PID 1 and ran on, and a resume
// started the same items beside them. The command now dies with tenax
// (Pdeathsig), and what it started, left in its process group, is ended by
// the next run of the job (EndLeftoverGroups).
func TestExecChildrenDoNotOutliveAKilledTenax(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("needs /proc")
	}
	dir := t.TempDir()
	groups, pids := filepath.Join(dir, "process-groups"), filepath.Join(dir, "pids")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The command records its own pid and its background child's.
	script := `sleep 300 & echo "$$ $!" > ` + pids + `.tmp; mv ` + pids + `.tmp ` + pids + `; wait`
	tenax := osexec.Command(exe, "run-task", groups, script)
	tenax.Env = append(os.Environ(), "TENAX_EXEC_HELPER=1")
	if err := tenax.Start(); err != nil {
		t.Fatal(err)
	}
	var command, child int
	for deadline := time.Now().Add(60 * time.Second); ; {
		if b, err := os.ReadFile(pids); err == nil {
			f := strings.Fields(string(b))
			command, _ = strconv.Atoi(f[0])
			child, _ = strconv.Atoi(f[1])
			break
		}
		if time.Now().After(deadline) {
			_ = tenax.Process.Kill()
			t.Fatal("the command never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer syscall.Kill(child, syscall.SIGKILL)
	_ = tenax.Process.Signal(syscall.SIGKILL)
	_ = tenax.Wait()
	if !processGone(command) {
		_ = syscall.Kill(command, syscall.SIGKILL)
		t.Errorf("the command %d outlived the tenax that started it", command)
	}
	n, err := EndLeftoverGroups(groups)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || !processGone(child) {
		t.Errorf("%d groups ended, the command's child gone: %v; want 1 and gone", n, processGone(child))
	}
	if b, _ := os.ReadFile(groups); len(b) != 0 {
		t.Errorf("the record still holds %q; want it emptied", b)
	}
}

// A group id from the record that an unrelated process holds now (ids
// are reused) is never killed: only a group one of whose processes carries
// the dead run's token.
func TestEndLeftoverGroupsSparesAnUnrelatedGroup(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("needs /proc")
	}
	other := osexec.Command("sleep", "300")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	path := filepath.Join(t.TempDir(), "process-groups")
	record := "run deadbeef\n+" + strconv.Itoa(other.Process.Pid) + "\n"
	if err := os.WriteFile(path, []byte(record), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := EndLeftoverGroups(path)
	if err != nil || n != 0 {
		t.Fatalf("EndLeftoverGroups = %d, %v; want 0 groups ended", n, err)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the unrelated group was killed: %v", err)
	}
}
