package input

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

// maxReportedBadLines is how many bad lines a Summary keeps.
const maxReportedBadLines = 20

// Summary is what one pass over an input tells before a run.
type Summary struct {
	// Items is the number of items, bad lines included: the size of the
	// idx space (blank lines are not items).
	Items int
	// SHA256 is the hex SHA-256 of the file's bytes, for the manifest and
	// resume's changed-input check.
	SHA256 string
	// BadLines holds the first 20 bad lines.
	BadLines []*LineError
	// BadCount is the number of bad lines in all.
	BadCount int
}

// Scan reads path once, streaming, and returns its item count, hash and
// bad lines. Bad lines are not an error: the caller applies
// input.on_bad_line. The error is for a file that cannot be read (or a
// CSV file whose header is bad).
func Scan(path string, f Format) (Summary, error) {
	if _, err := ParseFormat(string(f)); err != nil {
		return Summary{}, fmt.Errorf("input %s: %w", path, err)
	}
	file, err := os.Open(path)
	if err != nil {
		return Summary{}, fmt.Errorf("input: %w", err)
	}
	defer file.Close()
	h := sha256.New()
	r := NewReader(io.TeeReader(file, h), path, f)
	var s Summary
	for {
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		var le *LineError
		if errors.As(err, &le) && le.Idx >= 0 {
			s.BadCount++
			if len(s.BadLines) < maxReportedBadLines {
				s.BadLines = append(s.BadLines, le)
			}
		} else if err != nil {
			return Summary{}, err
		}
		s.Items++
	}
	// Next reports io.EOF only once the whole file is read, so this copies
	// nothing; it keeps the hash a hash of every byte of the file should
	// that ever change.
	if _, err := io.Copy(h, file); err != nil {
		return Summary{}, fmt.Errorf("input %s: %w", path, err)
	}
	s.SHA256 = hex.EncodeToString(h.Sum(nil))
	return s, nil
}
