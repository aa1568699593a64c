package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// agentGroupsSpec is an agent job whose exec tool, while the file "hang"
// exists, starts a background sleep in its process group, records its
// own pid and the sleep's in pids/, and waits for it.
const agentGroupsSpec = `
name: agent-groups
input: words.jsonl
task:
  type: llm
  provider: mock
  model: mock-agent
  prompt: "Tell me about the word '{{.word}}'."
  max_steps: 8
  tools:
    - name: lookup
      parameters: {type: object, required: [text], properties: {text: {type: string}}}
      exec: {argv: [./tool.sh], stdin: "{{.args.text}}"}
      idempotent: true
    - name: note
      parameters: {type: object, required: [text], properties: {text: {type: string}}}
      exec: {argv: [./tool.sh], stdin: "{{.args.text}}"}
      idempotent: true
concurrency: {max: 2}
cache: {enabled: false}
mock: {seed: 3}
`

// An agent's exec tool left its processes running after kill -9 of tenax:
// the tool's command died with tenax (Pdeathsig), but what it started, in
// its process group, ran on beside the resumed run, because only an exec
// task recorded its groups for the next run to end. The agent's exec
// tools now record theirs too, and the resume ends them before it runs
// anything.
func TestAResumeEndsTheProcessesAKilledAgentToolLeft(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("needs /proc")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := newWorkdir(t)
	var words strings.Builder
	for i := range 6 {
		words.WriteString(`{"word": "w` + strconv.Itoa(i) + `"}` + "\n")
	}
	w.write("words.jsonl", words.String(), 0o644)
	w.write("tool.sh", "#!/bin/sh\nif [ -e hang ]; then\n  sleep 300 &\n  echo \"$$ $!\" > pids/$$.tmp && mv pids/$$.tmp pids/$$\n  wait\nfi\nwc -c\n", 0o755)
	w.write("job.yaml", agentGroupsSpec, 0o644)
	w.write("hang", "", 0o644)
	pidsDir := filepath.Join(w.dir, "pids")
	if err := os.Mkdir(pidsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var children []int
	t.Cleanup(func() {
		for _, c := range children {
			_ = syscall.Kill(c, syscall.SIGKILL)
		}
	})

	p := startTenax(ctx, t, w.dir, w.home, "run", "job.yaml")
	if p.id == "" {
		t.Fatalf("the run printed no job line: %v\n%s", <-p.exited, p.stderr)
	}
	var commands []int
	if exited := pollUntil(ctx, t, p, func() bool {
		entries, _ := os.ReadDir(pidsDir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".tmp") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(pidsDir, e.Name()))
			if f := strings.Fields(string(b)); err == nil && len(f) == 2 {
				cmd, _ := strconv.Atoi(f[0])
				child, _ := strconv.Atoi(f[1])
				commands, children = append(commands, cmd), append(children, child)
			}
		}
		return len(children) > 0
	}); exited {
		t.Fatalf("the run ended before a tool started: %s", p.stderr)
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	for _, c := range commands {
		if !processEnded(ctx, c) {
			t.Errorf("the tool's command %d outlived the killed tenax", c)
		}
	}
	for _, c := range children {
		if !alive(c) {
			t.Fatalf("the tool's background process %d ended with tenax: the test shows nothing", c)
		}
	}

	if err := os.Remove(filepath.Join(w.dir, "hang")); err != nil {
		t.Fatal(err)
	}
	r := startTenax(ctx, t, w.dir, w.home, "resume", p.id)
	if code := exitCode(t, <-r.exited); code != 0 && code != 1 {
		t.Fatalf("the resume: exit %d\n%s", code, r.stderr)
	}
	for _, c := range children {
		if !processEnded(ctx, c) {
			t.Errorf("the tool's background process %d is still running after the resume", c)
		}
	}
	if !strings.Contains(r.stderr.String(), "ended the process groups a killed run of this job left running") {
		t.Errorf("the resume did not say it ended the groups:\n%s", r.stderr)
	}
}

// alive reports whether pid is a process that has not exited (a zombie
// has).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || !strings.HasPrefix(string(stat[i+1:]), " Z")
}

// processEnded polls until pid has exited (the kernel delivers a signal
// and reaps in its own time); ctx is the safety net.
func processEnded(ctx context.Context, pid int) bool {
	for alive(pid) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true
}
