package store

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Export formats accepted by Export and WriteOutput.
const (
	// FormatJSONL writes each record as one line of JSON, the same fields
	// as results.jsonl.
	FormatJSONL = "jsonl"
	// FormatCSV writes a header row and one row per record with the
	// columns CSVHeader names.
	FormatCSV = "csv"
)

// CSVHeader is the header row of the CSV format: the item's index and id,
// its failure class and error (empty on success), how many attempts it
// took, and its output as compact JSON text (empty when it has none; a
// failed invalid item keeps its last output). The input is left out: the
// item's id or _idx joins a row back to the input file.
var CSVHeader = []string{"_idx", "id", "class", "error", "attempts", "output"}

// Export writes the latest record of every idx of j that filter accepts
// (every one when filter is nil), in idx order, to w as format (FormatJSONL
// or FormatCSV). It holds one record at a time.
func Export(ctx context.Context, j Job, w io.Writer, format string, filter func(Record) bool) error {
	var write func(*Record) error
	var flush func() error
	bw := bufio.NewWriterSize(w, 64<<10)
	switch format {
	case FormatJSONL:
		var line []byte
		write = func(r *Record) error {
			var err error
			if line, err = r.AppendJSON(line[:0]); err != nil {
				return err
			}
			line = append(line, '\n')
			_, err = bw.Write(line)
			return err
		}
		flush = bw.Flush
	case FormatCSV:
		cw := csv.NewWriter(bw)
		if err := cw.Write(CSVHeader); err != nil {
			return fmt.Errorf("store: export: %w", err)
		}
		row := make([]string, len(CSVHeader))
		var out []byte
		write = func(r *Record) error {
			row[0] = strconv.Itoa(r.Idx)
			row[1] = r.ID
			row[2] = ""
			if r.Class != 0 {
				row[2] = r.Class.String()
			}
			row[3] = r.Error
			row[4] = strconv.Itoa(r.Attempts)
			row[5] = ""
			if len(r.Output) > 0 && string(r.Output) != "null" {
				var err error
				if out, err = appendRaw(out[:0], "output", r.Output); err != nil {
					return fmt.Errorf("store: export of idx %d: %w", r.Idx, err)
				}
				row[5] = string(out)
			}
			return cw.Write(row)
		}
		flush = func() error {
			cw.Flush()
			if err := cw.Error(); err != nil {
				return err
			}
			return bw.Flush()
		}
	default:
		return fmt.Errorf("store: unknown export format %q (want %s or %s)", format, FormatJSONL, FormatCSV)
	}
	err := j.Scan(ctx, func(r Record) error {
		if filter != nil && !filter(r) {
			return nil
		}
		return write(&r)
	})
	if err != nil {
		return fmt.Errorf("store: export: %w", err)
	}
	if err := flush(); err != nil {
		return fmt.Errorf("store: export: %w", err)
	}
	return nil
}

// WriteOutput exports j as Export does into the file at path, atomically:
// it writes a temporary file in path's directory, syncs it and renames it
// over path, so path never holds a partial file — it keeps its previous
// content, or stays absent, when anything fails.
func WriteOutput(ctx context.Context, j Job, path string, format string, filter func(Record) bool) error {
	if format != FormatJSONL && format != FormatCSV {
		return fmt.Errorf("store: unknown output format %q (want %s or %s)", format, FormatJSONL, FormatCSV)
	}
	return WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		return Export(ctx, j, w, format, filter)
	})
}

// WriteFileAtomic creates or replaces the file at path with what write
// produces, through a temporary file in the same directory that is synced,
// given perm and renamed over path; the directory is synced after the
// rename. When write fails the temporary file is removed and path is left
// as it was.
func WriteFileAtomic(path string, perm os.FileMode, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("store: writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("store: writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("store: writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("store: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("store: writing %s: %w", path, err)
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("store: writing %s: %w", path, err)
	}
	return nil
}

// SyncDir fsyncs a directory, making the entries created, renamed or
// removed in it durable: a file fsynced into a new directory entry can
// vanish with the entry on a power loss until the directory is synced too.
// A file system that cannot sync a directory (os.ErrInvalid) is not an
// error: the entry stands as well as that file system can keep it.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if cannotSyncDir(err) {
		return nil
	}
	return err
}

// cannotSyncDir reports an error that says the file system cannot fsync a
// directory (EINVAL on Linux, as some network and FUSE file systems
// answer), as opposed to one that says the sync failed.
func cannotSyncDir(err error) bool {
	return errors.Is(err, os.ErrInvalid) || errors.Is(err, syscall.EINVAL)
}
