package fix

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// benchRepo makes a committed repository of n small files.
func benchRepo(b *testing.B, n int) string {
	b.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	dir := b.TempDir()
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", i%50))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%04d.go", i)), []byte(fmt.Sprintf("package d\n\nvar V%d = %d\n", i, i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@b.invalid", "commit", "-qm", "b"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// BenchmarkAttemptBookkeeping is what tenax adds to every attempt on a
// 2,000-file tree: two snapshots (before and after the fixer) and the
// diff between them, with one file changed. BenchmarkGitStatus is the
// same tree's `git status`, the yardstick of docs/benchmarks.md.
func BenchmarkAttemptBookkeeping(b *testing.B) {
	dir := benchRepo(b, 2000)
	ctx := context.Background()
	tree, err := OpenTree(ctx, dir, nil, filepath.Join(b.TempDir(), "index"))
	if err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(dir, "d00", "f0000.go")
	if _, err := tree.Snapshot(ctx); err != nil { // the first fills the private index
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		before, err := tree.Snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(fmt.Sprintf("package d\n\nvar V0 = %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
		after, err := tree.Snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := tree.Diff(ctx, before, after); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGitStatus(b *testing.B) {
	dir := benchRepo(b, 2000)
	for i := 0; i < b.N; i++ {
		cmd := exec.Command("git", "status", "--porcelain")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
}
