package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// rejectedDir is the subdirectory that keeps rejected entries. Entry
// subdirectories are two hex digits, so it cannot collide with one.
const rejectedDir = "rejected"

// minKeyLen is the shortest key accepted: 64 bits of hash.
const minKeyLen = 16

// ErrBadKey is returned, wrapped, for a key that is not 16 or more
// lowercase hex digits.
var ErrBadKey = errors.New("cache: key must be 16 or more lowercase hex digits")

// Cache is a response cache in a directory. It holds no state but the
// directory's path, so it is safe for concurrent use, also by several
// processes sharing the directory: the last Put of a key wins.
type Cache struct {
	dir string
}

// Open returns the cache in dir, creating the directory if needed.
func Open(dir string) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return &Cache{dir: dir}, nil
}

// Dir returns the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// Key returns the cache key of v: the hex SHA-256 of its encoding/json
// encoding. Map keys are encoded sorted and struct fields in declaration
// order, so equal structs and maps give equal keys; pass those, not
// pre-encoded JSON whose key order may vary. Secrets must not be part of v.
func Key(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("cache: key: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// entry is the file format of an entry and of a rejected entry. Value
// holds a value that is valid JSON, verbatim, so entries are readable;
// ValueBase64 holds any other value.
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
// set. The value is written verbatim when it is JSON, so Get returns the
// very bytes Put stored (json.Marshal would compact and escape them).
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

// Get returns the value stored under key. A missing entry is a miss
// (false, nil); so is a corrupt one, which Get removes so the next Put
// replaces it. The error is for a bad key or a read that failed.
func (c *Cache) Get(key string) ([]byte, bool, error) {
	path, err := c.path(key)
	if err != nil {
		return nil, false, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cache: %w", err)
	}
	defer f.Close()
	data, err := readAll(f)
	if err != nil {
		return nil, false, fmt.Errorf("cache: %w", err)
	}
	var e entry
	if json.Unmarshal(data, &e) == nil {
		if v, ok := e.value(key); ok {
			return v, true, nil
		}
	}
	c.removeIfSame(path, f)
	return nil, false, nil
}

// readAll reads f whole, sized by its length.
func readAll(f *os.File) ([]byte, error) {
	var size int
	if info, err := f.Stat(); err == nil {
		size = int(info.Size())
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	_, err := buf.ReadFrom(f)
	return buf.Bytes(), err
}

// removeIfSame removes the corrupt entry at path unless another process
// has renamed a fresh entry there since f was opened.
func (c *Cache) removeIfSame(path string, f *os.File) {
	opened, err := f.Stat()
	if err != nil {
		return
	}
	current, err := os.Stat(path)
	if err != nil || !os.SameFile(opened, current) {
		return
	}
	_ = os.Remove(path)
}

// Put stores value under key, replacing any entry, atomically: readers
// see the old entry or the new one, never a part.
func (c *Cache) Put(key string, value []byte) error {
	path, err := c.path(key)
	if err != nil {
		return err
	}
	data, err := encode(key, value, "", time.Time{})
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return writeAtomic(path, data)
}

// Reject removes the entry under key, whose value proved invalid, so the
// next Get misses and the value is generated again. The entry is kept as
// dir/rejected/<key>.json, {"key", "value", "reason", "rejected_at"}, for
// analysis; a later rejection of the same key replaces it. Rejecting a
// key with no entry (another process rejected it first) does nothing.
func (c *Cache) Reject(key string, reason string) error {
	path, err := c.path(key)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cache: reject: %w", err)
	}
	// A corrupt entry is removed all the same; its bytes are kept as
	// the value, which is the best record of what was there.
	value := data
	var e entry
	if json.Unmarshal(data, &e) == nil {
		if v, ok := e.value(key); ok {
			value = v
		}
	}
	kept, err := encode(key, value, reason, time.Now())
	if err != nil {
		return fmt.Errorf("cache: reject: %w", err)
	}
	// Kept first, removed second: a crash in between leaves the entry
	// in both places, never in neither.
	if err := writeAtomic(filepath.Join(c.dir, rejectedDir, key+".json"), kept); err != nil {
		return fmt.Errorf("cache: reject: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cache: reject: %w", err)
	}
	return nil
}

// path returns the entry file of key, refusing keys that are not hex.
func (c *Cache) path(key string) (string, error) {
	if !validKey(key) {
		return "", fmt.Errorf("%w: %q", ErrBadKey, key)
	}
	return filepath.Join(c.dir, key[:2], key+".json"), nil
}

func validKey(key string) bool {
	if len(key) < minKeyLen {
		return false
	}
	for i := 0; i < len(key); i++ {
		if b := key[i]; (b < '0' || b > '9') && (b < 'a' || b > 'f') {
			return false
		}
	}
	return true
}

// writeAtomic writes data to path through a temporary file in the same
// directory and a rename. It does not fsync: a cache entry lost in a crash
// is only a miss, and one torn by it reads as a miss too.
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
