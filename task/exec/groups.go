package exec

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
)

// EnvRun is the variable every command of a run recording its process
// groups gets: the run's token, by which a later run recognizes the
// processes of the groups it left.
const EnvRun = "TENAX_EXEC_RUN"

// GroupFile records the process groups a task starts and sees end, in a
// file of the job's directory, so that a run started after this one was
// killed can end the groups it left running (EndLeftoverGroups). Each
// command dies with tenax (SysProcAttr), but what it started — a script's
// python, a test binary — lives on in its process group, reparented to
// PID 1, and a resume would start the same items again beside it.
//
// The file is appended to without fsync: a killed process's writes are in
// the page cache all the same, and a power cut, which could lose them,
// also ends the processes they name.
type GroupFile struct {
	mu    sync.Mutex
	f     *os.File
	token string
	// sink, set by NewGroupSink, takes each record in place of f.
	sink func(idx int, started bool, pgid int)
}

// NewGroupSink returns a GroupFile, with a new token, that hands each
// record to sink (idx: the item whose command it is) rather than writing
// a file: a River worker keeps them in PostgreSQL, where the worker that
// takes up an item next finds the groups a killed one left. sink is
// called from the command's goroutine, after it started and after it
// ended, and must return before the command goes on.
func NewGroupSink(sink func(idx int, started bool, pgid int)) (*GroupFile, error) {
	t, err := newToken()
	if err != nil {
		return nil, err
	}
	return &GroupFile{token: t, sink: sink}, nil
}

// newToken is a run's token: 24 random hex digits.
func newToken() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// Token is the run's token, the value of EnvRun in its commands.
func (g *GroupFile) Token() string { return g.token }

// OpenGroupFile opens path for this run's records, with a new token.
func OpenGroupFile(path string) (*GroupFile, error) {
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("exec: recording process groups: %w", err)
	}
	g := &GroupFile{f: f, token: token}
	if _, err := fmt.Fprintf(f, "run %s\n", g.token); err != nil {
		f.Close()
		return nil, fmt.Errorf("exec: recording process groups: %w", err)
	}
	return g, nil
}

// Env is the variable to give every command whose group is recorded:
// EnvRun=token.
func (g *GroupFile) Env() string { return EnvRun + "=" + g.token }

// Started records a process group the run started (pgid: its leader's
// pid); nil records nothing.
func (g *GroupFile) Started(pgid int) { g.record(-1, '+', pgid) }

// Ended records that the group's command is over and the group killed or
// left as the run means to.
func (g *GroupFile) Ended(pgid int) { g.record(-1, '-', pgid) }

// record appends "+pgid" (started) or "-pgid" (ended), or hands it to the
// sink with idx, the item's. A failed write only costs a later run the
// chance to end that group.
func (g *GroupFile) record(idx int, sign byte, pgid int) {
	if g == nil {
		return
	}
	if g.sink != nil {
		g.sink(idx, sign == '+', pgid)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	_, _ = fmt.Fprintf(g.f, "%c%d\n", sign, pgid)
}

// Close closes the file.
func (g *GroupFile) Close() error {
	if g == nil || g.f == nil {
		return nil
	}
	return g.f.Close()
}

// EndLeftoverGroups ends, with SIGKILL, the process groups that the runs
// recorded in path started and never saw end, when a process in the group
// still carries its run's token in its environment (so a process group id
// reused by an unrelated program is never touched), then empties the
// file. It returns how many groups it ended. Call it only while holding
// the job, when every run the file names is dead. Where processes cannot
// be read (systems without /proc), it ends nothing.
func EndLeftoverGroups(path string) (int, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	left := map[int]string{} // pgid → its run's token
	token := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if t, ok := strings.CutPrefix(line, "run "); ok {
			token = t
			continue
		}
		if len(line) < 2 || token == "" {
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		switch line[0] {
		case '+':
			left[pgid] = token
		case '-':
			delete(left, pgid)
		}
	}
	f.Close()
	if err := sc.Err(); err != nil {
		return 0, err
	}
	n := 0
	if len(left) > 0 {
		n = endGroups(left)
	}
	return n, os.Truncate(path, 0)
}

// EndGroups ends, with SIGKILL, each process group of left (pgid → the
// token of the run that started it) in which a process still carries that
// token (EnvRun) in its environment, and returns how many it ended: so a
// group whose command is over, its id since reused by another program, is
// never touched. Call it only for groups whose run is dead. Where
// processes cannot be read (systems without /proc), it ends nothing.
func EndGroups(left map[int]string) int {
	if len(left) == 0 {
		return 0
	}
	return endGroups(left)
}
