package main

import (
	"strings"
	"testing"
)

func TestWatchFlagsExplainTheirMistakes(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 2)
	spec := w.write("job.yaml", "input: items.jsonl\ntask: {type: exec, argv: [echo, '{{.n}}']}\n", 0o644)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"--ui ADDR without =", []string{"run", spec, "--ui", "127.0.0.1:8080"}, "write --ui=127.0.0.1:8080 (with =)"},
		{"an address that cannot be listened on", []string{"run", spec, "--ui=256.0.0.1:80"}, "--ui: web: listening on 256.0.0.1:80"},
		{"a metrics address that cannot be listened on", []string{"run", spec, "--metrics", "nowhere"}, "--metrics: web: listening on nowhere"},
		{"tenax ui of an unknown job", []string{"ui", "job_19990101_000000"}, `no job "job_19990101_000000": there are no jobs here yet`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := w.tenax(c.args...)
			if r.code != 2 || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", r.code, r.stderr, c.want)
			}
		})
	}
}

func TestRunWithUIPrintsTheURLAndFinishes(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 3)
	spec := w.write("job.yaml", "input: items.jsonl\ntask: {type: exec, argv: [echo, '{{.n}}']}\n", 0o644)
	r := w.tenax("run", spec, "--ui", "--metrics", "127.0.0.1:0", "-q")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"tenax: watch the run at http://127.0.0.1:", "tenax: Prometheus metrics at http://127.0.0.1:",
		// The page goes with the run; tenax ui serves it again.
		"tenax: the page closed with the run; tenax ui job_"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "token") {
		t.Errorf("a loopback address needs no token, yet one was printed:\n%s", r.stderr)
	}
}
