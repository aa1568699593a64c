package seams

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// clean are the packages that must link none of forbidden.
var clean = []string{"report", "metrics", "web", "engine", "task/exec", "store/jsonl"}

// forbidden names what a clean package must not link, each with why: a
// package whose import path contains the word (case-insensitive) is out,
// the mock server by its path.
var forbidden = []struct{ word, why string }{
	{"riverqueue", "River"},
	{"pgx", "the PostgreSQL driver"},
	{"openai", "the OpenAI SDK"},
	{"anthropic", "the Anthropic SDK"},
	{"azure", "the Azure SDK"},
	{module + "/mock", "tenax's mock server"},
}

const module = "github.com/tenaxhq/tenax"

// TestCleanPackagesLinkNoDriverNorSDK: report linked the OpenAI,
// Anthropic and Azure SDKs (report → batch), and metrics and web linked
// River, pgx and every provider SDK (web → metrics → worker), although
// they only read records, metrics and jobs (issue 35). Each offender is
// named with the import chain that brings it in.
func TestCleanPackagesLinkNoDriverNorSDK(t *testing.T) {
	goCmd := goCommand(t)
	args := []string{"list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}"}
	for _, p := range clean {
		args = append(args, "./"+p)
	}
	cmd := exec.CommandContext(t.Context(), goCmd, args...)
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	imports := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 {
			imports[f[0]] = f[1:]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range clean {
		root := module + "/" + p
		if _, ok := imports[root]; !ok {
			t.Fatalf("go list -deps named no %s: the list of clean packages names a package that is gone", root)
		}
		for _, f := range forbidden {
			chain, others := nearest(imports, root, func(path string) bool { return offends(path, f.word) })
			if chain == nil {
				continue
			}
			more := ""
			if others > 0 {
				more = fmt.Sprintf(", and %d more of its packages", others)
			}
			t.Errorf("%s links %s (%s)%s, through\n\t%s\n"+
				"declare what %s needs of it as an interface in %s and let cmd/tenax wire the real one (docs/architecture.md, Seams)",
				p, chain[len(chain)-1], f.why, more, strings.Join(short(chain), " → "), p, p)
		}
	}
}

// offends reports whether the package at path is one a forbidden entry
// names: its path holds the word, or is the mock's path or under it.
func offends(path, word string) bool {
	if strings.HasPrefix(word, module+"/") {
		return path == word || strings.HasPrefix(path, word+"/")
	}
	return strings.Contains(strings.ToLower(path), word)
}

// nearest walks the import graph breadth-first from root and returns the
// shortest import chain from root to a package bad holds, and how many
// other such packages root reaches; nil when it reaches none.
func nearest(imports map[string][]string, root string, bad func(string) bool) (chain []string, others int) {
	from := map[string]string{root: ""}
	queue := []string{root}
	var found string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if bad(p) {
			if found == "" {
				found = p
			} else {
				others++
			}
		}
		for _, q := range imports[p] {
			if _, seen := from[q]; !seen {
				from[q] = p
				queue = append(queue, q)
			}
		}
	}
	if found == "" {
		return nil, 0
	}
	for p := found; p != ""; p = from[p] {
		chain = append([]string{p}, chain...)
	}
	return chain, others
}

// short drops the module's prefix from tenax's own packages, so that a
// chain reads as report → batch → github.com/openai/openai-go/v3.
func short(chain []string) []string {
	out := make([]string, len(chain))
	for i, p := range chain {
		out[i] = strings.TrimPrefix(p, module+"/")
	}
	return out
}

// goCommand is the go command of the toolchain that runs the test: the go
// of `go env GOROOT`, so that the graph is the one this build sees.
func goCommand(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH (%v): cannot run go list -deps to check the seams", err)
	}
	root, err := exec.CommandContext(t.Context(), goCmd, "env", "GOROOT").Output()
	if err != nil {
		return goCmd
	}
	own := filepath.Join(strings.TrimSpace(string(root)), "bin", "go")
	if _, err := os.Stat(own); err != nil {
		return goCmd
	}
	return own
}
