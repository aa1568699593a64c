package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// completions runs `tenax __complete args…` as a shell's completion script
// does at a TAB and returns the candidates, without their descriptions.
func completions(t *testing.T, w *workdir, args ...string) []string {
	t.Helper()
	r := w.tenax(append([]string{"__complete"}, args...)...)
	if r.code != 0 {
		t.Fatalf("tenax __complete %q: exit %d\n%s", args, r.code, r.stderr)
	}
	var out []string
	for line := range strings.SplitSeq(strings.TrimSpace(r.stdout), "\n") {
		if strings.HasPrefix(line, ":") { // the directive
			continue
		}
		name, _, _ := strings.Cut(line, "\t")
		out = append(out, name)
	}
	return out
}

// TestCompletionListsJobsFingerprintsAndFlagValues: TAB completed
// subcommands and flags but no job ids, fingerprints, --format or
// --retry-failures values.
func TestCompletionListsJobsFingerprintsAndFlagValues(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 4)
	w.write("tool.sh", "#!/bin/sh\n[ $(($1 % 2)) = 1 ] && { echo \"no license $1\" >&2; exit 127; }\necho ok\n", 0o755)
	w.write("job.yaml", "name: licenses\ninput: items.jsonl\ntask:\n  type: exec\n  argv: [\"./tool.sh\", \"{{.n}}\"]\n", 0o644)
	var ids []string
	for range 2 {
		r := w.tenax("run", "job.yaml")
		if r.code != 1 {
			t.Fatalf("run: exit %d, want 1 (failures)\n%s", r.code, r.stderr)
		}
		ids = append(ids, jobID(t, r))
	}
	var st struct {
		ErrorGroups []struct{ Fingerprint string } `json:"error_groups"`
	}
	if err := json.Unmarshal([]byte(w.tenax("status", "--json").stdout), &st); err != nil || len(st.ErrorGroups) != 1 {
		t.Fatalf("status --json: %v %+v", err, st)
	}
	jobs := []string{"latest", ids[1], ids[0], "licenses"}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"status's job", []string{"status", ""}, jobs},
		{"export's job", []string{"export", ""}, jobs},
		{"resume's job", []string{"resume", ""}, jobs},
		{"ui's job", []string{"ui", ""}, jobs},
		{"a second job is not asked for", []string{"status", ids[0], ""}, nil},
		{"breaker's decision", []string{"breaker", ""}, []string{"continue", "abort"}},
		{"breaker's job", []string{"breaker", "abort", ""}, jobs},
		{"--fingerprint of the job named", []string{"resume", ids[0], "--fingerprint", ""}, []string{st.ErrorGroups[0].Fingerprint}},
		{"--format", []string{"export", "latest", "--format", ""}, []string{"jsonl", "csv"}},
		{"--retry-failures=", []string{"resume", "latest", "--retry-failures="}, []string{"retryable", "fatal", "item", "invalid"}},
		{"--retry-failures= after a class", []string{"resume", "latest", "--retry-failures=fatal,"}, []string{"fatal,retryable", "fatal,item", "fatal,invalid"}},
		{"--log-format", []string{"status", "--log-format", ""}, []string{"text", "json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := completions(t, w, tt.args...)
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("tenax __complete %q = %q, want %q", tt.args, got, tt.want)
			}
		})
	}
	// Another --home has no jobs: nothing to complete, and no error.
	if got := completions(t, w, "--home", w.dir+"/elsewhere", "status", ""); len(got) != 0 {
		t.Errorf("completion in an empty home = %q", got)
	}
}

// TestCompletionScriptsAskTenax: the bash, zsh and fish scripts call
// `tenax __complete` at each TAB, so the lists above reach every shell.
func TestCompletionScriptsAskTenax(t *testing.T) {
	w := newWorkdir(t)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		r := w.tenax("completion", shell)
		if r.code != 0 || !strings.Contains(r.stdout, "__complete") {
			t.Errorf("tenax completion %s: exit %d, no __complete call:\n%.300s", shell, r.code, r.stdout)
		}
	}
}
