package exec

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
)

// TestStdoutOverTheBoundStopsTheCommandAsAnItemFailure: a command that
// writes stdout forever is stopped once it passes the bound, and the
// attempt fails as the item's, naming the bound and its spec key; the
// command got no more than a pipe's buffer past the bound taken from it.
// (100 MB of stdout took 596 MB of memory.)
func TestStdoutOverTheBoundStopsTheCommandAsAnItemFailure(t *testing.T) {
	const bound = 1 << 20
	count := filepath.Join(t.TempDir(), "written")
	cfg := helperConfig(t, "flood", count)
	cfg.MaxAnswerBytes = bound
	_, err := mustNew(t, cfg).Run(t.Context(), task.Item{})
	if _, ok := errors.AsType[*task.AnswerTooLargeError](err); !ok || !strings.HasSuffix(err.Error(), ": stdout over 1 MiB (task.max_answer_bytes)") {
		t.Fatalf("err = %v; want an *AnswerTooLargeError ending \"stdout over 1 MiB (task.max_answer_bytes)\"", err)
	}
	if d := classify.Classify(err); d.Class != classify.Item {
		t.Errorf("classified %v; want item", d)
	}
	b, err := os.ReadFile(count)
	if err != nil {
		t.Fatal(err)
	}
	// A pipe holds 64 KiB.
	written, _ := strconv.Atoi(strings.TrimLeft(string(b), "0"))
	if written < bound-64<<10 || written > bound+256<<10 {
		t.Errorf("the command got %d bytes of stdout taken; want from %d to %d: the read must stop at the bound", written, bound-64<<10, bound+256<<10)
	}
}

// TestStdoutUpToTheBoundIsTheOutput: the bound refuses only what is over
// it.
func TestStdoutUpToTheBoundIsTheOutput(t *testing.T) {
	text := strings.Repeat("a", 1000)
	cfg := helperConfig(t, "print", text)
	cfg.MaxAnswerBytes = 1000
	res, err := mustNew(t, cfg).Run(t.Context(), task.Item{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := outputString(t, res); got != text {
		t.Errorf("output is %d bytes; want the whole 1000", len(got))
	}
}
