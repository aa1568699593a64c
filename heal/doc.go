// Package heal turns "the output was wrong" into a bounded conversation:
// re-ask with feedback, one error at a time, until the output is valid or
// a budget says stop.
//
// A model's answer, a generated script, or a code base under `tenax fix`
// is checked; the check reports errors. The heal loop picks one, tells the
// producer what failed, and checks again:
//
//	generate → check → Observe → Next → Spend → FormatFeedback → re-ask → check → …
//
// Four pieces make the loop, each usable on its own:
//
//   - Normalize and Fingerprint identify an error across attempts. The
//     message is reduced to its invariant part (numbers, ids, paths,
//     line:col, timestamps, addresses and quoted values become
//     placeholders such as <int> and <path>) and hashed with the check's
//     name, so "line 12" and "line 40" are one error while two different
//     messages stay two. Normalize is deterministic, never a model.
//
//   - Tracker follows fingerprints across checks: new, active, fixed, or
//     regressed when a fixed error comes back. Next picks the error to
//     work on (regressed first, then new, then active, the oldest first),
//     Spend pays for each re-ask out of two budgets, one per error
//     (Budget.MaxErrorAttempts, default 5) and one in all
//     (Budget.MaxAttempts, default 8), and stops a loop that is stuck: a
//     re-ask answered with the very output it was given, or, when
//     Budget.StuckAfter is set, checks that keep seeing the same errors.
//     The first generation is free: an output that never becomes valid
//     costs 1 + MaxErrorAttempts generations. The state and an audit trail
//     of every re-ask encode to JSON, so a fix run resumes.
//
//   - FormatFeedback writes what the producer is told: its previous
//     output, fenced and capped; the error, its cause chain and the first
//     lines of stderr; and every hint whose pattern matches. It is
//     deterministic, so response caches keyed on the prompt still hit.
//
//   - Extract reads a check's output (go test, pytest, jest and vitest,
//     tsc, eslint, and compilers' path:line:col: message lines) into the
//     errors the tracker observes.
//
// The engine runs this loop for every item whose output fails validation
// (class invalid); when a budget is exhausted the item fails with class
// invalid and the tracked errors in its record. A Tracker is per-loop
// state: one per item or fix run, not shared between goroutines.
package heal
