package input

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkScanForLimit is the check before `tenax run --limit 100000` of
// a ten-million-line input: "limit" scans as a --limit run now does, up to
// its items; "whole" scans the whole file, as every run did before.
func BenchmarkScanForLimit(b *testing.B) {
	const lines, limit = 10_000_000, 100_000
	path := filepath.Join(b.TempDir(), "items.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range lines {
		fmt.Fprintf(w, "{\"id\": \"u%d\", \"text\": \"a short sentence to translate\"}\n", i)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	fi, _ := f.Stat()
	f.Close()
	for _, bc := range []struct {
		name string
		opts ScanOptions
		want int
	}{
		{"limit", ScanOptions{MaxItems: limit}, limit},
		{"whole", ScanOptions{}, lines},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s, err := Scan(b.Context(), path, JSONL, bc.opts)
				if err != nil || s.Items != bc.want {
					b.Fatalf("Scan: %d items, %v; want %d", s.Items, err, bc.want)
				}
			}
			b.ReportMetric(float64(fi.Size())/1e6, "input-MB")
		})
	}
}
