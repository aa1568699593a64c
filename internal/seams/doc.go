// Package seams holds a test over tenax's import graph: the packages that
// read and show what runs (report, metrics, web) and the core every mode
// shares (engine, task/exec, store/jsonl) link no River, no pgx, no
// provider SDK and no mock server, as `go list -deps` tells it. A console
// reads jobs, records and workers through interfaces it declares, and
// cmd/tenax wires the real ones (docs/architecture.md, "Seams"); a test
// keeps an import that drags a driver in from slipping back unseen.
package seams
