// Package jsonl is tenax's default store: each job is a directory of plain
// files under Home/jobs/<id>/, readable with cat, jq and grep.
//
//	manifest.json   what ran over which input, and the job's state;
//	                replaced atomically (temp file, fsync, rename)
//	results.jsonl   append-only, one record per finished item: the
//	                checkpoint, and the only source of truth
//	failures.jsonl  the failed items with their last error, written by
//	                Finish (temp file, fsync, rename)
//	lock            flock'ed while a process has the job open for writing
//
// Appends go to a buffer that is written and fsynced every FlushEvery
// records, every FlushInterval, on Flush and on Close, so a crash loses at
// most that much work — and never a record already flushed. A crash
// mid-write leaves a torn last line: readers ignore it, and opening the job
// for writing cuts it off (or, when it is a whole record missing only its
// newline, completes it) so the next record starts on a fresh line. Any
// other damaged line is a *CorruptError naming the line, never skipped.
//
// Reading never loads the log. Outcomes scans each line for its top-level
// _idx, error and class keys only, so resuming a job costs a byte per item
// however large the outputs; Scan remembers one offset per item and decodes
// one record at a time.
//
// Store.Open takes the lock: a second writer — a second `tenax resume` of
// a running job — gets an *InUseError ("job … is in use by another tenax
// process (pid N)"). Store.OpenReadOnly takes none, for status and export
// while a run goes on; it sees what the writer has flushed. The lock is an
// flock, so it is released when the process dies, and the package builds
// on unix systems only.
package jsonl
