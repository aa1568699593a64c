// Package jsonl is tenax's default store: each job is a directory of plain
// files under Home/jobs/<id>/, readable with cat, jq and grep.
//
//	manifest.json   what ran over which input, and the job's state;
//	                replaced atomically (temp file, fsync, rename)
//	results.jsonl   append-only, one record per finished item: the
//	                checkpoint, and the only source of truth
//	results.idx     16 bytes per line of results.jsonl (offset, checksum,
//	                length, _idx, failed): what resume reads instead of the log;
//	                a cache, checked against the log, rebuilt from it
//	failures.jsonl  the failed items with their last error, written by
//	                Finish (temp file, fsync, rename)
//	failures.from   which log failures.jsonl was made from (its size and
//	                the CRC of its end), so a Finish that appended nothing
//	                leaves an up-to-date failures.jsonl alone, copied or not
//	lock            flock'ed while a process has the job open for writing
//
// Appends go to a buffer that is written and fsynced every FlushEvery
// records, every FlushInterval, on Flush and on Close, so a crash loses at
// most that much work — and never a record already flushed. A crash
// mid-write leaves a torn last line: readers ignore it, and opening the job
// for writing cuts it off (or, when it is a whole record missing only its
// newline, completes it) so the next record starts on a fresh line. Any
// other damaged line is a *CorruptError naming the line, never skipped; so
// is a record whose _idx is past the job's items (a line appended by hand).
//
// Reading never loads the log. Outcomes reads results.idx, sixteen bytes
// per record, so resuming a job costs time in proportion to its records,
// not to the bytes of their outputs, and a byte of memory per item. The
// index is trusted only as far as it checks out (every entry's checksum;
// its last usable entry and a sample of others must name the lines really
// there in the log); the lines it lacks are
// read from the log, scanning each for its top-level _idx, error and class
// keys only (a long stretch in chunks, by one goroutine per CPU, its lines
// taken in log order), and an index that does not match is rebuilt. Scan
// remembers one offset per item and decodes one record at a time.
//
// A failed write or fsync (a full disk) is kept: every later Append and
// Flush returns it, with the path and the OS error, and Append refuses its
// records, so the caller stops rather than computing results it cannot
// save. So is a job directory removed while the job runs (noticed at the
// next flush, store.ErrNotFound): an open file would otherwise take the
// writes where nobody can find them.
//
// Store.Open takes the lock: a second writer — a second `tenax resume` of
// a running job — gets an *InUseError ("job … is in use by another tenax
// process (pid N)"). Store.OpenReadOnly takes none, for status and export
// while a run goes on; it sees what the writer has flushed. The lock is an
// flock, so it is released when the process dies, and the package builds
// on unix systems only.
package jsonl
