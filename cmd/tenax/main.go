package main

import (
	"os"

	"github.com/tenaxhq/tenax/internal/heapfloor"
)

// heapFloor is the smallest heap goal a tenax process collects at. A run
// keeps 1–2 MB alive and allocates some 25 KB a call, so Go's own floor of
// 4 MB made it collect 60 times a second at full speed; at 32 MB it
// collects a few times a second, for some 30 MB more memory
// (docs/benchmarks.md, "The heap's floor").
const heapFloor = 32 << 20

func main() {
	// GOGC set by the user is their choice of memory against CPU: obeyed,
	// and GOGC=100 gives Go's own floor back.
	if _, set := os.LookupEnv("GOGC"); !set {
		heapfloor.Hold(heapFloor) // for the life of the process
	}
	os.Exit(execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
