// Package fix is the fix loop behind `tenax fix`: run a check (tests, a
// compiler, a linter), extract its errors, give ONE error to a fixer,
// re-run the check, and repeat within budgets, on heal's tracker:
//
//	check → extract → Observe → pick (fewest attempts; regressed, new, active)
//	      → snapshot → fixer → snapshot → diff (recorded) → check → worse? revert
//
// The pick is round robin by default (Config.Order): an error with the
// fewest attempts spent goes first, so every error gets a turn before any
// gets another; OrderStrict is heal's order alone.
//
// A Check runs a command and reads its errors with one of heal's
// extractors (go test, pytest, jest, vitest, tsc, eslint, path:line:col);
// its exit status decides whether it passed. A Fixer fixes one error per
// call: ExecFixer runs a command that gets the Request as JSON on stdin
// and TENAX_ERROR_* variables and edits the files itself; LLMFixer asks a
// model for edits in a search/replace or whole-file format (ParseEdits,
// ApplyEdits) and re-asks, with what went wrong, when they do not apply.
//
// The user's work is never lost. The work directory must be a git work
// tree without uncommitted changes (Config.AllowDirty overrides). Before
// and after every attempt the tree is snapshotted as a git tree object
// through an index of the run's own, so the user's index is untouched;
// the difference is the attempt's edit, kept as attempts/NNNN.patch
// (undo it with git apply -R). An attempt that leaves the check strictly
// worse (more errors, or a fixed error back) is reverted and counts as
// failed, unless Config.KeepWorse. Config.Commit commits each fix.
//
// Budgets are heal's: Budget.MaxErrorAttempts per error (5), MaxAttempts
// in all (8), StuckAfter checks in a row with the same errors. A run's
// state.json (the tracker, budgets spent, the attempt in progress) is
// written atomically after every step and audit.jsonl gets one fsynced
// record per check and attempt, so Resume continues a run killed at any
// point with the budgets it had spent; an attempt cut short is recorded
// and checked first. An interrupt snapshots the tree before the run exits,
// so what the user edits before resuming is never taken for the fixer's
// edit nor reverted with it.
package fix
