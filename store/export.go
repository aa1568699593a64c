package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// CSVHeader lists the fixed columns of the CSV format: the item's index
// and id, its failure class and error (empty on success), how many attempts
// it took, and its output. Between id and class come the item's input
// fields, one column each, in the order they first appear (a field named
// like a fixed column is prefixed "input."). Text is written as text: a
// JSON string output or input value is its string, not JSON-quoted; numbers
// and booleans are their literals, null is empty, and objects and arrays
// are compact JSON. A failed invalid item keeps its last output.
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
		write, flush = jsonlWriter(bw)
	case FormatCSV:
		var err error
		if write, flush, err = csvWriter(ctx, j, filter, bw); err != nil {
			return fmt.Errorf("store: export: %w", err)
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

// jsonlWriter writes records as JSON lines to bw.
func jsonlWriter(bw *bufio.Writer) (write func(*Record) error, flush func() error) {
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
	return write, bw.Flush
}

// csvWriter writes records as CSV rows to bw, after the header; a first
// pass over j finds the input fields' columns, since the header comes
// first.
func csvWriter(ctx context.Context, j Job, filter func(Record) bool, bw *bufio.Writer) (write func(*Record) error, flush func() error, err error) {
	// A first pass finds the input fields: the header comes first.
	inputCols, err := inputColumns(ctx, j, filter)
	if err != nil {
		return nil, nil, err
	}
	header := slices.Concat(CSVHeader[:2], inputCols.names, CSVHeader[2:])
	cw := csv.NewWriter(bw)
	if err := cw.Write(header); err != nil {
		return nil, nil, err
	}
	row := make([]string, len(header))
	var out []byte
	n := len(inputCols.keys)
	write = func(r *Record) error {
		row[0] = strconv.Itoa(r.Idx)
		row[1] = r.ID
		clear(row[2 : 2+n])
		if n > 0 && len(r.Input) > 0 && r.Input[0] == '{' {
			var fields map[string]json.RawMessage
			if json.Unmarshal(r.Input, &fields) == nil {
				for i, k := range inputCols.keys {
					if v, ok := fields[k]; ok {
						row[2+i] = csvText(v)
					}
				}
			}
		}
		c := row[2+n:]
		c[0] = ""
		if r.Class != 0 {
			c[0] = r.Class.String()
		}
		c[1] = r.Error
		c[2] = strconv.Itoa(r.Attempts)
		c[3] = ""
		if len(r.Output) > 0 && string(r.Output) != "null" {
			var err error
			if out, err = appendRaw(out[:0], "output", r.Output); err != nil {
				return fmt.Errorf("store: export of idx %d: %w", r.Idx, err)
			}
			c[3] = csvText(out)
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
	return write, flush, nil
}

// columns are the input fields of a CSV export: keys as in the input,
// names as in the header.
type columns struct {
	keys, names []string
}

// inputColumns returns the fields of the inputs of the records filter
// accepts, in the order they first appear; "id" is the id column already.
func inputColumns(ctx context.Context, j Job, filter func(Record) bool) (columns, error) {
	var c columns
	seen := map[string]bool{"id": true}
	err := j.Scan(ctx, func(r Record) error {
		if (filter != nil && !filter(r)) || len(r.Input) == 0 || r.Input[0] != '{' {
			return nil
		}
		dec := json.NewDecoder(bytes.NewReader(r.Input))
		if _, err := dec.Token(); err != nil {
			return nil
		}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return nil
			}
			key, _ := t.(string)
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			name := key
			if slices.Contains(CSVHeader, key) {
				name = "input." + key
			}
			c.keys = append(c.keys, key)
			c.names = append(c.names, name)
		}
		return nil
	})
	return c, err
}

// csvText is a JSON value as a CSV cell: a string's text, a literal's
// text, "" for null, compact JSON for an object or array.
func csvText(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	switch {
	case len(v) == 0 || string(v) == "null":
		return ""
	case v[0] == '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
	case v[0] == '{' || v[0] == '[':
		var b bytes.Buffer
		if json.Compact(&b, v) == nil {
			return b.String()
		}
	}
	return string(v)
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
// as it was. Temporary files of path that a killed process left behind
// (".NAME.tmp-DIGITS") are removed first: two processes writing one path
// at once already race, and the last rename would win.
func WriteFileAtomic(path string, perm os.FileMode, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	removeStaleTemps(dir, base)
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

// removeStaleTemps removes the temporary files WriteFileAtomic made for
// dir/base in processes that died before renaming or removing them.
func removeStaleTemps(dir, base string) {
	prefix := "." + base + ".tmp-"
	matches, err := filepath.Glob(filepath.Join(dir, globEscape(prefix)+"*"))
	if err != nil {
		return
	}
	for _, m := range matches {
		suffix := strings.TrimPrefix(filepath.Base(m), prefix)
		if suffix == "" || strings.Trim(suffix, "0123456789") != "" {
			continue // not a name os.CreateTemp gave
		}
		_ = os.Remove(m)
	}
}

// globEscape quotes the characters filepath.Match treats specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
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
