package jsonl_test

import (
	"bufio"
	"os"
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

// BenchmarkOutcomes1M reads the outcomes of a log of a million records,
// one in ten failed: the cost of starting a resume.
func BenchmarkOutcomes1M(b *testing.B) {
	const items = 1_000_000
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
	for i := range items {
		rec := record(i)
		if i%10 == 0 {
			rec.Output, rec.Error, rec.Class = nil, "HTTP 422: unprocessable", classify.Item
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
	r, err := s.OpenReadOnly(b.Context(), id)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.SetBytes(fi.Size())
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
}
