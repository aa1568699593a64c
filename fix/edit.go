package fix

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The edit format an LLM fixer answers in. Two kinds of block, any number
// of each, anywhere in the answer (text around them is ignored):
//
//	<<<<<<< SEARCH path/to/file.go
//	the exact lines to replace
//	=======
//	the lines to put instead
//	>>>>>>> REPLACE
//
//	<<<<<<< FILE path/to/new_or_whole_file.go
//	the whole content of the file
//	>>>>>>> END
//
// A SEARCH block must match exactly one place of the file (trailing white
// space aside); an empty SEARCH creates a file that does not exist yet.
const (
	markSearch  = "<<<<<<< SEARCH "
	markFile    = "<<<<<<< FILE "
	markDivider = "======="
	markReplace = ">>>>>>> REPLACE"
	markEnd     = ">>>>>>> END"
)

// FileEdit is one block of an answer.
type FileEdit struct {
	// Path is the file, relative to the work directory.
	Path string
	// Whole is set for a FILE block: Content replaces the file.
	Whole   bool
	Content string
	// Search and Replace are a SEARCH block's two halves.
	Search, Replace string
}

// EditError says why an answer's edits could not be applied; its message
// is the feedback the model gets.
type EditError struct {
	Problems []string
}

func (e *EditError) Error() string {
	return "the edits do not apply:\n- " + strings.Join(e.Problems, "\n- ")
}

// ErrNoEdits: the answer holds no edit block.
var ErrNoEdits = errors.New("the answer holds no edit block")

// ParseEdits reads the edit blocks of an answer.
func ParseEdits(answer string) ([]FileEdit, error) {
	lines := strings.Split(strings.ReplaceAll(answer, "\r\n", "\n"), "\n")
	var edits []FileEdit
	var problems []string
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], " \t")
		switch {
		case strings.HasPrefix(line, markSearch):
			path := strings.TrimSpace(strings.TrimPrefix(line, markSearch))
			var search, replace []string
			j, divided, closed := i+1, false, false
			for ; j < len(lines); j++ {
				l := strings.TrimRight(lines[j], " \t")
				if !divided && l == markDivider {
					divided = true
					continue
				}
				if divided && l == markReplace {
					closed = true
					break
				}
				if divided {
					replace = append(replace, lines[j])
				} else {
					search = append(search, lines[j])
				}
			}
			if !closed {
				problems = append(problems, fmt.Sprintf("the SEARCH block for %s at line %d has no %q line and %q closing it", path, i+1, markDivider, markReplace))
				i = len(lines)
				continue
			}
			edits = append(edits, FileEdit{Path: path, Search: joinLines(search), Replace: joinLines(replace)})
			i = j
		case strings.HasPrefix(line, markFile):
			path := strings.TrimSpace(strings.TrimPrefix(line, markFile))
			var content []string
			j, closed := i+1, false
			for ; j < len(lines); j++ {
				if strings.TrimRight(lines[j], " \t") == markEnd {
					closed = true
					break
				}
				content = append(content, lines[j])
			}
			if !closed {
				problems = append(problems, fmt.Sprintf("the FILE block for %s at line %d is not closed by %q", path, i+1, markEnd))
				i = len(lines)
				continue
			}
			edits = append(edits, FileEdit{Path: path, Whole: true, Content: joinLines(content)})
			i = j
		}
	}
	if len(problems) > 0 {
		return nil, &EditError{Problems: problems}
	}
	if len(edits) == 0 {
		return nil, ErrNoEdits
	}
	return edits, nil
}

// joinLines joins block lines, ending with a newline when there are any.
func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// ApplyEdits applies edits to the files under dir, all or none: every edit
// is checked against the files first, and nothing is written when any
// fails (an *EditError lists why). It returns the files written.
func ApplyEdits(dir string, edits []FileEdit) ([]string, error) {
	contents := map[string]string{} // path → new content
	exists := map[string]bool{}
	var order []string
	var problems []string
	for n, e := range edits {
		where := fmt.Sprintf("edit %d (%s)", n+1, e.Path)
		rel, err := safePath(dir, e.Path)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		cur, seen := contents[rel]
		if !seen {
			b, err := os.ReadFile(filepath.Join(dir, rel))
			switch {
			case err == nil:
				cur, exists[rel] = string(b), true
			case errors.Is(err, os.ErrNotExist):
				cur = ""
			default:
				problems = append(problems, fmt.Sprintf("%s: %v", where, err))
				continue
			}
			order = append(order, rel)
		}
		if e.Whole {
			contents[rel] = e.Content
			continue
		}
		if e.Search == "" {
			if exists[rel] || seen {
				problems = append(problems, fmt.Sprintf("%s: the SEARCH text is empty, but the file exists; quote the lines to replace", where))
				continue
			}
			contents[rel] = e.Replace
			continue
		}
		if !exists[rel] && !seen {
			problems = append(problems, fmt.Sprintf("%s: no such file; to create it, use a FILE block", where))
			continue
		}
		next, err := replaceOnce(cur, e.Search, e.Replace)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		contents[rel] = next
	}
	if len(problems) > 0 {
		return nil, &EditError{Problems: problems}
	}
	var written []string
	for _, rel := range order {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return written, err
		}
		mode := os.FileMode(0o644)
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode().Perm()
		}
		if err := os.WriteFile(path, []byte(contents[rel]), mode); err != nil {
			return written, err
		}
		written = append(written, filepath.ToSlash(rel))
	}
	return written, nil
}

// safePath checks that p names a file inside dir, outside .git.
func safePath(dir, p string) (string, error) {
	if p == "" {
		return "", errors.New("no file path after the marker")
	}
	if filepath.IsAbs(p) {
		return "", errors.New("the path must be relative to the work directory")
	}
	rel := filepath.Clean(filepath.FromSlash(p))
	if rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", errors.New("the path leaves the work directory")
	}
	if first, _, _ := strings.Cut(filepath.ToSlash(rel), "/"); first == ".git" {
		return "", errors.New("tenax does not edit .git")
	}
	// A symbolic link on the way (a linked vendor or docs directory) would
	// take the write where no snapshot records it and no revert undoes it.
	if _, err := insideThroughLinks(dir, rel); err != nil {
		return "", err
	}
	if fi, err := os.Stat(filepath.Join(dir, rel)); err == nil && fi.IsDir() {
		return "", errors.New("the path is a directory")
	}
	return rel, nil
}

// insideThroughLinks checks that rel, a clean relative path, still names a
// file inside dir, outside .git, once the symbolic links of its existing
// part are followed, and returns that real path relative to dir's real
// path, slash-separated.
func insideThroughLinks(dir, rel string) (string, error) {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	// The longest part of the path that exists; the rest is created under it.
	existing, rest := filepath.Join(dir, rel), ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return filepath.ToSlash(rel), nil
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		// A dangling link: it would create its target, wherever that is.
		return "", errors.New("the path goes through a symbolic link whose target is missing")
	}
	realRel, err := filepath.Rel(realDir, filepath.Join(real, rest))
	if err != nil || realRel == ".." || strings.HasPrefix(realRel, ".."+string(filepath.Separator)) {
		return "", errors.New("the path leaves the work directory through a symbolic link")
	}
	if first, _, _ := strings.Cut(filepath.ToSlash(realRel), "/"); first == ".git" {
		return "", errors.New("tenax does not edit .git")
	}
	return filepath.ToSlash(realRel), nil
}

// replaceOnce replaces the one occurrence of search in s: exactly, or
// else comparing lines without their trailing white space.
func replaceOnce(s, search, replace string) (string, error) {
	switch n := strings.Count(s, search); {
	case n == 1:
		return strings.Replace(s, search, replace, 1), nil
	case n > 1:
		return "", fmt.Errorf("the SEARCH text occurs %d times; quote more lines so it matches one place", n)
	}
	lines := strings.SplitAfter(s, "\n")
	want := strings.Split(strings.TrimSuffix(search, "\n"), "\n")
	var at []int
	for i := 0; i+len(want) <= len(lines); i++ {
		ok := true
		for k, w := range want {
			if strings.TrimRight(lines[i+k], " \t\r\n") != strings.TrimRight(w, " \t\r") {
				ok = false
				break
			}
		}
		if ok {
			at = append(at, i)
		}
	}
	switch len(at) {
	case 0:
		return "", errors.New("the SEARCH text does not occur in the file; it must repeat the file's current lines exactly")
	case 1:
		i := at[0]
		return strings.Join(lines[:i], "") + replace + strings.Join(lines[i+len(want):], ""), nil
	}
	return "", fmt.Errorf("the SEARCH text occurs %d times (ignoring trailing spaces); quote more lines so it matches one place", len(at))
}
