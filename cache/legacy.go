package cache

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// entry is the JSON form of a rejected entry, and of an entry in the
// file-per-entry layout that tenax used before the log (dir/<key[:2]>/
// <key>.json), which Open migrates. Value holds a value that is valid JSON,
// verbatim, so entries are readable; ValueBase64 holds any other value.
type entry struct {
	Key         string          `json:"key"`
	Value       json.RawMessage `json:"value,omitempty"`
	ValueBase64 *string         `json:"value_base64,omitempty"`
	Reason      string          `json:"reason,omitempty"`
	RejectedAt  *time.Time      `json:"rejected_at,omitempty"`
}

// value returns the entry's value, and false when the entry is corrupt.
func (e *entry) value(key string) ([]byte, bool) {
	if e.Key != key {
		return nil, false
	}
	switch {
	case e.ValueBase64 != nil && e.Value == nil:
		b, err := base64.StdEncoding.DecodeString(*e.ValueBase64)
		return b, err == nil
	case e.Value != nil && e.ValueBase64 == nil:
		return e.Value, true
	}
	return nil, false
}

// encode writes the entry holding value, then the rejection fields if
// set. The value is written verbatim when it is JSON, so the bytes Put
// stored are the bytes kept (json.Marshal would compact and escape them).
func encode(key string, value []byte, reason string, at time.Time) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(len(value) + len(key) + 64)
	b.WriteString(`{"key":"`)
	b.WriteString(key) // hex: nothing to escape
	if json.Valid(value) {
		b.WriteString(`","value":`)
		b.Write(value)
	} else {
		b.WriteString(`","value_base64":"`)
		b.WriteString(base64.StdEncoding.EncodeToString(value))
		b.WriteByte('"')
	}
	if !at.IsZero() {
		r, err := json.Marshal(reason)
		if err != nil {
			return nil, err
		}
		t, err := at.UTC().MarshalJSON()
		if err != nil {
			return nil, err
		}
		b.WriteString(`,"reason":`)
		b.Write(r)
		b.WriteString(`,"rejected_at":`)
		b.Write(t)
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// writeAtomic writes data to path through a temporary file in the same
// directory and a rename, so a reader sees the old file or the new one.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// isLegacyDir reports whether name is a directory of the file-per-entry
// layout: two lowercase hex digits, the first two of its entries' keys.
func isLegacyDir(name string) bool {
	return len(name) == 2 && validHex(name)
}

// migrate moves the entries of the file-per-entry layout in c.dir into the
// log, then removes their files: appended and synced first, removed second,
// so a crash in between leaves an entry in both places, never in neither.
// A file that does not parse is removed, as a Get of it used to do. Two
// processes migrating at once append the same entries twice, which is
// harmless: the same key gets the same value. It returns how many entries
// it moved.
func (c *Cache) migrate() (int, error) {
	dirs, err := os.ReadDir(c.dir)
	if err != nil {
		return 0, fmt.Errorf("cache: %w", err)
	}
	var moved int
	for _, d := range dirs {
		if !d.IsDir() || !isLegacyDir(d.Name()) {
			continue
		}
		sub := filepath.Join(c.dir, d.Name())
		n, err := c.migrateDir(sub)
		moved += n
		if err != nil {
			return moved, err
		}
		_ = os.Remove(sub) // only once empty; another process may still write there
	}
	return moved, nil
}

// migrateDir moves one two-digit directory's entries into the log.
func (c *Cache) migrateDir(sub string) (int, error) {
	files, err := os.ReadDir(sub)
	if err != nil {
		return 0, fmt.Errorf("cache: migrating %s: %w", sub, err)
	}
	var (
		batch []byte
		done  []string
		moved int
	)
	flush := func() error {
		if len(batch) == 0 && len(done) == 0 {
			return nil
		}
		if len(batch) > 0 {
			if _, err := c.f.Write(batch); err != nil {
				return fmt.Errorf("cache: migrating %s: %w", sub, err)
			}
			if err := c.f.Sync(); err != nil {
				return fmt.Errorf("cache: migrating %s: %w", sub, err)
			}
		}
		for _, p := range done {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("cache: migrating %s: %w", sub, err)
			}
		}
		batch, done = batch[:0], done[:0]
		return nil
	}
	for _, fe := range files {
		name := fe.Name()
		path := filepath.Join(sub, name)
		if strings.HasPrefix(name, ".tmp-") {
			done = append(done, path) // a write that never finished
			continue
		}
		key, ok := strings.CutSuffix(name, ".json")
		if !ok || fe.IsDir() || !validKey(key) {
			continue // not ours: leave it
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // another process migrated it first
		}
		if err != nil {
			return moved, fmt.Errorf("cache: migrating %s: %w", path, err)
		}
		var e entry
		if json.Unmarshal(data, &e) == nil {
			if v, ok := e.value(key); ok {
				at := time.Now()
				if info, err := fe.Info(); err == nil {
					at = info.ModTime() // when it was put, for prune --older-than
				}
				batch = appendRecord(batch, opPut, key, v, at.UnixMilli())
				moved++
			}
		}
		done = append(done, path)
		if len(batch) >= 1<<20 {
			if err := flush(); err != nil {
				return moved, err
			}
		}
	}
	return moved, flush()
}

// RejectedEntry is an entry Reject moved out of the cache, kept for
// analysis with the reason its value proved invalid.
type RejectedEntry struct {
	Key        string
	Value      []byte
	Reason     string
	RejectedAt time.Time
}

// Rejected calls yield with each entry kept under dir/rejected/, in the
// order of their keys, until yield returns false. A file that does not
// parse, or whose name is no key, is not one (a write that never
// finished); it is left alone.
func (c *Cache) Rejected(yield func(RejectedEntry) bool) error {
	files, err := os.ReadDir(filepath.Join(c.dir, rejectedDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	for _, fe := range files {
		key, ok := strings.CutSuffix(fe.Name(), ".json")
		if !ok || fe.IsDir() || !validKey(key) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(c.dir, rejectedDir, fe.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // rejected again meanwhile, and renamed over
		}
		if err != nil {
			return fmt.Errorf("cache: %w", err)
		}
		var e entry
		if json.Unmarshal(data, &e) != nil {
			continue
		}
		v, ok := e.value(key)
		if !ok {
			continue
		}
		r := RejectedEntry{Key: key, Value: v, Reason: e.Reason}
		if e.RejectedAt != nil {
			r.RejectedAt = *e.RejectedAt
		}
		if !yield(r) {
			return nil
		}
	}
	return nil
}

// Exists reports whether dir holds a cache of either layout: the log, the
// file-per-entry layout's two-digit directories, or rejected entries.
// Open creates a cache where there is none; a command that reads one
// (tenax cache copy) asks first, so that a mistyped path is an error and
// not an empty cache.
func Exists(dir string) (bool, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cache: %w", err)
	}
	for _, e := range ents {
		switch name := e.Name(); {
		case name == LogName && !e.IsDir(),
			name == rejectedDir && e.IsDir(),
			isLegacyDir(name) && e.IsDir():
			return true, nil
		}
	}
	return false, nil
}
