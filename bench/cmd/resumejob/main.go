// Command resumejob writes a finished JSONL job of many large records, for
// bench/resume.sh to time `tenax resume` on: a spec, its input of N items,
// and a job under HOME/jobs whose results.jsonl holds a record of about
// 2 KB for every item (one in ten failed), without results.idx. It prints
// the job id.
//
//	go run ./cmd/resumejob -home /tmp/h -dir /tmp/w -n 1000000
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/input"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

func main() {
	home := flag.String("home", "", "tenax home to create the job in")
	dir := flag.String("dir", "", "directory for the spec and the input")
	n := flag.Int("n", 1_000_000, "items and records")
	flag.Parse()
	if *home == "" || *dir == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*home, *dir, *n); err != nil {
		fmt.Fprintln(os.Stderr, "resumejob:", err)
		os.Exit(1)
	}
}

func run(home, dir string, n int) error {
	ctx := context.Background()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	in := filepath.Join(dir, "items.jsonl")
	if err := writeLines(in, n, func(w *bufio.Writer, i int) { fmt.Fprintf(w, "{\"n\": %d}\n", i) }); err != nil {
		return err
	}
	spec := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(spec, []byte("input: items.jsonl\ntask: {type: exec, argv: [echo, '{{.n}}']}\n"), 0o644); err != nil {
		return err
	}
	sum, err := input.Scan(ctx, in, input.JSONL, input.ScanOptions{})
	if err != nil {
		return err
	}
	st := &jsonl.Store{Home: home}
	j, err := st.Create(ctx, store.Manifest{
		Name: "resume benchmark", SpecPath: spec, InputPath: in, InputSHA256: sum.SHA256,
		Items: sum.Items, State: store.StateFailed,
	})
	if err != nil {
		return err
	}
	id, jobDir := j.Manifest().ID, j.(*jsonl.Job).Dir()
	if err := j.Close(); err != nil {
		return err
	}
	output := json.RawMessage(`{"text":"` + strings.Repeat("lorem ipsum ", 165) + `"}`)
	finished := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	var line []byte
	err = writeLines(filepath.Join(jobDir, "results.jsonl"), n, func(w *bufio.Writer, i int) {
		rec := store.Record{Idx: i, Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), Output: output,
			Attempts: 1, GenerationAttempts: 1, DurationMS: 120, FinishedAt: finished}
		if i%10 == 0 {
			rec.Output, rec.Error, rec.Class = nil, "HTTP 422: "+strings.Repeat("unprocessable ", 140), classify.Item
		}
		line, _ = rec.AppendJSON(line[:0])
		w.Write(append(line, '\n'))
	})
	if err != nil {
		return err
	}
	// The job as an older tenax left it: no index.
	if err := os.Remove(filepath.Join(jobDir, "results.idx")); err != nil && !os.IsNotExist(err) {
		return err
	}
	fmt.Println(id)
	return nil
}

func writeLines(path string, n int, line func(*bufio.Writer, int)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range n {
		line(w, i)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
