package fix

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"

	texec "github.com/tenaxhq/tenax/task/exec"
)

// killGrace is how long a command's output pipes may stay open after it
// was killed or exited: a process that outlives the command holds them.
const killGrace = 5 * time.Second

// runGroup runs cmd in a process group of its own and leaves nothing of the
// group behind: when cmd's context ends, the whole group is killed, and
// whatever the command left running when it exited is killed too. A check's
// command is rarely the process that hangs (go test runs a test binary, npm
// runs jest, a script runs python), and a fixer's background child that
// outlives it would edit files after the attempt was recorded, mixing its
// edits into the next attempt or into the user's tree after tenax exits.
//
// groups, when set, records the group, so that a resume after tenax was
// killed ends what the command left running (texec.GroupFile).
func runGroup(cmd *exec.Cmd, groups *texec.GroupFile) error {
	cmd.SysProcAttr = texec.SysProcAttr()
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = killGrace
	if groups != nil {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, groups.Env())
	}
	err := cmd.Start()
	if err == nil {
		groups.Started(cmd.Process.Pid)
		err = cmd.Wait()
	}
	if cmd.Process != nil {
		// The group outlives its leader only while a member lives, and a
		// reaped pid is not handed out again until the pid space wraps.
		_ = killGroup(cmd.Process.Pid)
		groups.Ended(cmd.Process.Pid)
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		// Wait says so only of a command that exited 0 while a process
		// it left held its output open: the command's own status decides.
		return nil
	}
	return err
}

// killGroup kills the process group led by pid; os.ErrProcessDone when
// nothing of it is left.
func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
