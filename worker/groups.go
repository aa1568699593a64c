package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/task"
	execTask "github.com/tenaxhq/tenax/task/exec"
)

// Process groups on workers: an exec task's command, or an agent's exec
// tool's, dies with its worker (Pdeathsig), but what the command started
// itself lives on in its process group. A local run records the groups in
// the job's directory and its resume ends them (job's recordGroups); a
// worker records each group it starts and sees end as a note of the item,
// kind "process-groups:<idx>", naming its host, its boot and itself (pid
// and start time). The worker that takes up a rescued item (its River job's
// attempt past the first) reads them before the item runs: a group left by
// a worker of this host and boot that is no longer alive is ended with
// SIGKILL where a process in it still carries that run's token
// (execTask.EndGroups); one left on another host, or by a worker still
// alive, cannot be ended from here, and the item's record says so
// (task.AgentStats.LeftProcesses). docs/agents.md tells the rules.

// groupsKind is the note kind of item idx's process groups.
func groupsKind(idx int) string { return "process-groups:" + strconv.Itoa(idx) }

// groupNote is one note of an item's process groups: a group started or
// ended by the worker it names.
type groupNote struct {
	Host string `json:"host"`
	Boot string `json:"boot"`
	// PID and PIDStart are the worker process's id and start time (in
	// clock ticks since boot, /proc/pid/stat): a pid reused by another
	// process has another start time.
	PID      int    `json:"pid"`
	PIDStart string `json:"pid_start,omitempty"`
	Token    string `json:"token"`
	PGID     int    `json:"pgid"`
	Started  bool   `json:"started"`
	// EndedBy, on a note of an ended group, is the worker that ended it
	// after its own worker died (empty: its own worker saw it end).
	EndedBy string `json:"ended_by,omitempty"`
}

// self is this worker process as its group notes name it.
type self struct {
	host, boot string
	pid        int
	pidStart   string
}

// thisProcess reads this process's host, boot and start time.
func thisProcess() self {
	s := self{host: hostname(), pid: os.Getpid()}
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		s.boot = strings.TrimSpace(string(b))
	}
	s.pidStart, _ = processStart(s.pid)
	return s
}

// processStart reads pid's start time from /proc/pid/stat; ok is false
// when no such process runs (a zombie included: it has ended).
func processStart(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", false
	}
	// The fields after the parenthesised command: state ppid … starttime
	// is the 20th.
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || string(f[0]) == "Z" || string(f[0]) == "X" {
		return "", false
	}
	return string(f[19]), true
}

// recordGroups makes tk's commands record their process groups as notes
// of their items; a task that starts no commands is returned as it is,
// with nil.
func (r *runner) recordGroups(tk task.Task) (task.Task, *execTask.GroupFile, error) {
	me := r.w.proc
	var g *execTask.GroupFile
	g, err := execTask.NewGroupSink(func(idx int, started bool, pgid int) {
		n := groupNote{Host: me.host, Boot: me.boot, PID: me.pid, PIDStart: me.pidStart, Token: g.Token(), PGID: pgid, Started: started}
		r.appendGroupNote(idx, n)
	})
	if err != nil {
		return nil, nil, err
	}
	out, ok := job.WithProcessGroups(tk, g)
	if !ok {
		return tk, nil, nil
	}
	return out, g, nil
}

// appendGroupNote appends n to item idx's group notes. A failed append
// only costs a later worker the chance to end that group: it is logged.
func (r *runner) appendGroupNote(idx int, n groupNote) {
	b, err := json.Marshal(n)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.w.hard), 30*time.Second)
		err = r.sj.AppendNote(ctx, groupsKind(idx), b)
		cancel()
	}
	if err != nil {
		r.w.log.Warn("recording a process group failed: a worker that takes the item up after this one dies cannot end it",
			"job", r.jobID, "item", idx, "pgid", n.PGID, "error", err)
	}
}

// endLeftGroups ends the process groups earlier workers of item idx left
// running, as the package's comment says, and returns what it could not
// end or ended, each a sentence for the item's record.
func (r *runner) endLeftGroups(ctx context.Context, idx int) ([]string, error) {
	notes, err := r.sj.Notes(ctx, groupsKind(idx))
	if err != nil {
		return nil, fmt.Errorf("worker: reading the process groups item %d's earlier workers left: %w", idx, err)
	}
	type key struct {
		token string
		pgid  int
	}
	left := map[key]groupNote{}
	var order []key
	for _, b := range notes {
		var n groupNote
		if json.Unmarshal(b, &n) != nil || n.PGID <= 1 || n.Token == "" {
			continue
		}
		k := key{n.Token, n.PGID}
		if !n.Started {
			delete(left, k)
			continue
		}
		if _, ok := left[k]; !ok {
			order = append(order, k)
		}
		left[k] = n
	}
	me := r.w.proc
	var said []string
	for _, k := range order {
		n, ok := left[k]
		if !ok || (n.PID == me.pid && n.PIDStart == me.pidStart && n.Host == me.host) {
			continue // ended, or this worker's own
		}
		who := fmt.Sprintf("process group %d of the worker (pid %d) on host %s that ran this item before", n.PGID, n.PID, n.Host)
		switch {
		case n.Host != me.host || n.Boot != me.boot || me.boot == "":
			said = append(said, who+": not ended, it is on another host (or boot) than this worker's ("+me.host+"), and may still be running")
			continue
		case alive(n):
			said = append(said, who+": not ended, that worker is still alive")
			continue
		}
		ended := execTask.EndGroups(map[int]string{n.PGID: n.Token})
		end := n
		end.Started, end.EndedBy = false, fmt.Sprintf("%s pid %d", me.host, me.pid)
		r.appendGroupNote(idx, end)
		if ended > 0 {
			r.w.log.Warn("ended a process group a killed worker left running", "job", r.jobID, "item", idx, "pgid", n.PGID, "worker_pid", n.PID)
			said = append(said, who+": ended (SIGKILL) by this worker")
		}
	}
	return said, nil
}

// alive reports whether the worker that wrote n still runs.
func alive(n groupNote) bool {
	start, ok := processStart(n.PID)
	return ok && start == n.PIDStart
}
