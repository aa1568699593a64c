package web

import (
	"testing"

	"github.com/tenaxhq/tenax/internal/lazyregexp"
)

// TestEveryPatternCompiles: the package's regular expressions compile on
// first use (lazyregexp, so that start-up does not pay for them); a
// pattern that does not compile fails here, not on the path that first
// reads it.
func TestEveryPatternCompiles(t *testing.T) {
	if err := lazyregexp.CheckAll(); err != nil {
		t.Fatalf("a pattern does not compile: %v", err)
	}
}
