package gzipbomb_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/tenaxhq/tenax/internal/gzipbomb"
)

// TestWriteInflatesToPrefixFillAndSuffix: the stream is valid gzip (its
// checksum and size agree) and inflates to exactly what was asked, at a
// small fraction of its size on the wire.
func TestWriteInflatesToPrefixFillAndSuffix(t *testing.T) {
	const n = 8 << 20
	var wire bytes.Buffer
	if err := gzipbomb.Write(&wire, []byte(`{"a":"`), 'x', n, []byte(`"}`)); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(wire.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("inflating the bomb: %v", err)
	}
	want := append(append([]byte(`{"a":"`), bytes.Repeat([]byte{'x'}, n)...), `"}`...)
	if !bytes.Equal(got, want) {
		t.Errorf("inflated to %d bytes starting %q; want %d bytes: the prefix, %d fill bytes and the suffix", len(got), got[:min(len(got), 16)], len(want), n)
	}
	if wire.Len() > n/500 {
		t.Errorf("the bomb is %d bytes on the wire for %d inflated; want under 1/500", wire.Len(), n)
	}
}
