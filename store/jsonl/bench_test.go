package jsonl_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// BenchmarkAppend measures the checkpoint writer: with the default flush
// settings (an fsync every 100 records) and with fsyncs out of the way.
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name string
		s    jsonl.Store
	}{
		{"default-flush", jsonl.Store{}},
		{"no-fsync", jsonl.Store{FlushEvery: 1 << 30, FlushInterval: time.Hour}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := bc.s
			s.Home = b.TempDir()
			j := createJob(b, &s)
			rec := record(1)
			b.ReportAllocs()
			for b.Loop() {
				if err := j.Append(b.Context(), rec); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkOutcomes reads the outcomes of a log of records of about 2 KB
// each, one in ten failed: the cost of starting a resume. "index" reads
// results.idx as a resume does; "log-scan" reads without it, as every
// resume did before the index existed (the log scanned for each record's
// _idx, error and class). TENAX_BENCH_RECORDS sets the count (default
// 100,000; docs/benchmarks.md uses 1,000,000).
func BenchmarkOutcomes(b *testing.B) {
	items := 100_000
	if n, err := strconv.Atoi(os.Getenv("TENAX_BENCH_RECORDS")); err == nil && n > 0 {
		items = n
	}
	s := &jsonl.Store{Home: b.TempDir()}
	j := createJob(b, s)
	id := j.Manifest().ID
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
	f, err := os.OpenFile(resultsPath(j), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var line []byte
	output := json.RawMessage(`{"text":"` + strings.Repeat("lorem ipsum ", 165) + `"}`)
	for i := range items {
		rec := record(i)
		rec.Output = output
		if i%10 == 0 {
			rec.Output, rec.Error, rec.Class = nil, "HTTP 422: "+strings.Repeat("unprocessable ", 140), classify.Item
		}
		if line, err = rec.AppendJSON(line[:0]); err != nil {
			b.Fatal(err)
		}
		_, _ = w.Write(append(line, '\n'))
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	fi, _ := f.Stat()
	f.Close()
	// A writer's open builds results.idx.
	wj, err := s.Open(b.Context(), id)
	if err != nil {
		b.Fatal(err)
	}
	if err := wj.Close(); err != nil {
		b.Fatal(err)
	}
	index, err := os.ReadFile(filepath.Join(j.Dir(), "results.idx"))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name     string
		setIndex func()
	}{
		{"index", func() { _ = os.WriteFile(filepath.Join(j.Dir(), "results.idx"), index, 0o644) }},
		{"log-scan", func() { _ = os.Remove(filepath.Join(j.Dir(), "results.idx")) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bc.setIndex()
			r, err := s.OpenReadOnly(b.Context(), id)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			b.ReportAllocs()
			for b.Loop() {
				o, err := r.Outcomes(b.Context())
				if err != nil {
					b.Fatal(err)
				}
				if _, failed, _ := o.Count(items); failed != items/10 {
					b.Fatalf("Outcomes counted %d failed, want %d", failed, items/10)
				}
			}
			b.ReportMetric(float64(fi.Size())/float64(items), "log-bytes/record")
			b.ReportMetric(float64(b.N)*float64(items)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
