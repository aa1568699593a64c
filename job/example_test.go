package job_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
)

// Example runs a job as `tenax run` does, from a spec file: an exec task
// over three input lines.
func Example() {
	dir, _ := os.MkdirTemp("", "tenax-example-")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "words.txt"), []byte("alpha\nbeta\ngamma\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(`
input: words.txt
task:
  type: exec
  argv: ["echo", "{{.text}}"]
`), 0o644)

	res, err := job.Run(context.Background(), filepath.Join(dir, "job.yaml"), job.Options{
		Home:   filepath.Join(dir, ".tenax"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("succeeded %d, failed %d, pending %d, exit code %d\n", res.Succeeded, res.Failed, res.Pending, res.ExitCode)
	// Output: succeeded 3, failed 0, pending 0, exit code 0
}

// Example_store runs a job in a store of the caller's choosing — here the
// in-memory one; postgres.Open or job.OpenStore give the others — and
// reads its records back from that store.
func Example_store() {
	dir, _ := os.MkdirTemp("", "tenax-example-")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "words.txt"), []byte("alpha\nbeta\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(`
input: words.txt
task:
  type: exec
  argv: ["echo", "{{.text}}"]
`), 0o644)

	ctx := context.Background()
	st := &memory.Store{}
	res, err := job.Run(ctx, filepath.Join(dir, "job.yaml"), job.Options{
		Store:  st,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	j, _ := st.OpenReadOnly(ctx, res.JobID)
	defer j.Close()
	_ = j.Scan(ctx, func(r store.Record) error {
		fmt.Printf("%d %s\n", r.Idx, r.Output)
		return nil
	})
	// Output:
	// 0 "alpha"
	// 1 "beta"
}
