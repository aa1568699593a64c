package fix_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/tenaxhq/tenax/fix"
	"github.com/tenaxhq/tenax/heal"
)

// A repository whose check fails while answer.txt does not say 42, and a
// fixer command that writes it: the loop runs the check, gives the one
// error to the fixer, and checks again.
func ExampleStart() {
	dir, _ := os.MkdirTemp("", "fix-example-")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "answer.txt"), []byte("41\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(".tenax/\n"), 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=x", "-c", "user.email=x@x.invalid", "commit", "-qm", "start"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if err := cmd.Run(); err != nil {
			fmt.Println("git:", err)
			return
		}
	}
	res, err := fix.Start(context.Background(), fix.Config{
		Workdir: dir,
		Home:    filepath.Join(dir, ".tenax"),
		Check: fix.Check{
			Argv:   []string{"sh", "-c", `v=$(cat answer.txt); [ "$v" = 42 ] || { echo "answer.txt:1: answer is $v, want 42"; exit 1; }`},
			Dir:    dir,
			Parser: fix.ParserGeneric,
		},
		Fixer:  fix.ExecFixer{Argv: []string{"sh", "-c", "echo 42 > answer.txt"}},
		Budget: heal.Budget{MaxErrorAttempts: 2, MaxAttempts: 3},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s after %d attempt(s), %d checks\n", res.Outcome, res.Attempts, res.Checks)
	// Output: passed after 1 attempt(s), 2 checks
}

// Errors with one normalized message in several tests form a group: the
// fixer is told, since fixing one often fixes all.
func ExampleGroups() {
	t := heal.NewTracker(heal.Budget{})
	t.Observe(fix.Extract(fix.ParserGoTest, `--- FAIL: TestGreet (0.00s)
    --- FAIL: TestGreet/Ann (0.00s)
        greet_test.go:9: Greet("Ann") = "Hi Ann", want "Hello, Ann"
    --- FAIL: TestGreet/Bo (0.00s)
        greet_test.go:9: Greet("Bo") = "Hi Bo", want "Hello, Bo"
FAIL`))
	for _, g := range fix.Groups(t.Errors()) {
		fmt.Println(g.Normalized)
		for _, e := range g.Errors {
			fmt.Println(" ", e.Name)
		}
	}
	// Output:
	// <path>:<n>: Greet(<quoted>) = <value>, want <quoted>
	//   TestGreet/Ann
	//   TestGreet/Bo
}
