package fix

import (
	"bufio"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tenaxhq/tenax/internal/lazyregexp"
)

// Location is where an error points in the work directory.
type Location struct {
	// File is relative to the work directory, with forward slashes.
	File string `json:"file"`
	// Line and Column are 1-based; 0 when unknown.
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
}

// Source is the code around a Location.
type Source struct {
	File string `json:"file"`
	// StartLine is the line number of the first line of Text.
	StartLine int `json:"start_line"`
	// Text is the lines around the error.
	Text string `json:"text"`
}

// sourceContext is the lines shown before and after an error's line.
const sourceContext = 10

var locationPattern = lazyregexp.New(`((?:[A-Za-z]:)?[\w.\-@+/\\]*\.\w+)(?::(\d+)(?::(\d+))?|\((\d+),(\d+)\))`)

// skipDirs are never searched for a file an error names.
var skipDirs = map[string]bool{".git": true, "node_modules": true, ".tenax": true, "vendor": true, "__pycache__": true, ".venv": true}

// maxWalk bounds the files looked at to find one an error names.
const maxWalk = 50_000

// locate finds the first file:line in msg, then in output, that names a
// file of the work directory that f lets tenax read. A path relative to a
// package (go test's calc_test.go:12) is found by its ending. An error
// whose message names a file f fences (.env, a link out of the tree) has
// no location: the output's first file is another error's.
func locate(ctx context.Context, f fence, msg, output string) (Location, bool) {
	for i, text := range []string{msg, output} {
		for _, m := range locationPattern().FindAllStringSubmatch(text, 50) {
			file := resolveFile(f.dir, m[1])
			if file == "" {
				continue
			}
			if _, err := f.allow(ctx, file); err != nil {
				if i == 0 {
					return Location{}, false
				}
				continue
			}
			l := Location{File: file}
			l.Line, _ = strconv.Atoi(m[2] + m[4])
			l.Column, _ = strconv.Atoi(m[3] + m[5])
			return l, true
		}
	}
	return Location{}, false
}

// resolveFile returns p relative to dir when it names a file there, else
// the one file under dir whose path ends with p, else "".
func resolveFile(dir, p string) string {
	p = filepath.FromSlash(p)
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(dir, p)
		if err != nil || strings.HasPrefix(rel, "..") {
			return ""
		}
		p = rel
	}
	p = filepath.Clean(p)
	if strings.HasPrefix(p, "..") {
		return ""
	}
	if fi, err := os.Stat(filepath.Join(dir, p)); err == nil && fi.Mode().IsRegular() {
		return filepath.ToSlash(p)
	}
	found, n := "", 0
	suffix := string(filepath.Separator) + p
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if n++; n > maxWalk {
			return filepath.SkipAll
		}
		if d.IsDir() {
			if skipDirs[d.Name()] && path != dir {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, suffix) {
			rel, _ := filepath.Rel(dir, path)
			if found != "" {
				found = "" // ambiguous
				return filepath.SkipAll
			}
			found = filepath.ToSlash(rel)
		}
		return nil
	})
	return found
}

// readSource returns the lines around l, when fc lets tenax read its file.
func readSource(ctx context.Context, fc fence, l Location) *Source {
	rel, err := fc.allow(ctx, l.File)
	if err != nil {
		return nil
	}
	f, err := os.Open(filepath.Join(fc.dir, rel))
	if err != nil {
		return nil
	}
	defer f.Close()
	first, last := 1, 2*sourceContext+1
	if l.Line > 0 {
		first, last = max(1, l.Line-sourceContext), l.Line+sourceContext
	}
	var b strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan() && n <= last; n++ {
		if n >= first {
			b.WriteString(sc.Text())
			b.WriteByte('\n')
		}
	}
	return &Source{File: l.File, StartLine: first, Text: b.String()}
}
