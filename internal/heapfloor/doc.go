// Package heapfloor keeps the garbage collector's heap goal from falling
// below a floor.
//
// Go sets the next collection's goal at the live heap plus GOGC percent of
// it (and of the stacks and globals), never below 4 MB. A tenax run keeps
// little alive, 1–2 MB, while each LLM call allocates tens of kilobytes
// (request, answer, the SDK's decoding), so a run at 6,000 calls a second
// met its 4 MB goal 60 times a second: 106 collections in 1.7 s. At a 32 MB
// floor the same run collected 7 times and used 0.72–0.82× the CPU, for
// 1.7× the peak memory (docs/benchmarks.md, "The heap's floor"). Hold sets
// GOGC after each collection so that the next goal is the floor, and gives
// the percentage back once the live heap is half the floor or more, where
// Go's own goal (twice the live heap) is at the floor anyway: a process
// whose live heap is large collects as it did.
//
//	release := heapfloor.Hold(32 << 20)
//	defer release()
//
// It is the runtime's percentage it changes, shared by the whole process,
// so a program holds one floor, from its main; a user who set GOGC is
// obeyed by not holding one (cmd/tenax does so). A memory limit
// (GOMEMLIMIT) still applies beneath the floor.
package heapfloor
