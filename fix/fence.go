package fix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// fence is the one rule for the files of a work directory that tenax
// quotes to a fixer (the error's file, the file it tests, the code around
// the error) and that it writes from a model's answer. A file passes when
// it lies inside the work directory once every symbolic link on its path
// is followed, outside .git, outside tenax's own state (its home, and any
// directory named .tenax), and is not ignored by git. Reading is fenced
// like writing because the check's output is not trusted: a line
// `key:1:1: error` beside a link `key -> ~/.ssh/id_rsa` would otherwise
// put the key in the model's prompt. Writing is fenced because an edit
// tenax's snapshots cannot see (an ignored file, tenax's own state) is in
// no patch and can never be reverted.
type fence struct {
	dir string
	// protected are paths relative to dir (slash-separated) that hold
	// tenax's state.
	protected []string
}

// stateDirName is tenax's default home; a directory of that name is
// another run's state even when this run's home is elsewhere.
const stateDirName = ".tenax"

// newFence fences dir; protected are paths relative to dir.
func newFence(dir string, protected []string) fence {
	return fence{dir: dir, protected: protected}
}

// protectedPaths returns the homes that lie inside dir, relative to it,
// for Request.Protected.
func protectedPaths(dir string, homes ...string) []string {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		realDir = dir
	}
	if abs, err := filepath.Abs(realDir); err == nil {
		realDir = abs
	}
	var out []string
	for _, h := range homes {
		if h == "" {
			continue
		}
		abs, err := filepath.Abs(h)
		if err != nil {
			continue
		}
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			abs = r
		}
		rel, err := filepath.Rel(realDir, abs)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

// allow returns p cleaned and relative to the work directory when tenax
// may read or write it, else an error that says why (it is the feedback
// a model gets for an edit it may not make).
func (f fence) allow(ctx context.Context, p string) (string, error) {
	rel, err := safePath(f.dir, p)
	if err != nil {
		return "", err
	}
	realRel, err := insideThroughLinks(f.dir, rel)
	if err != nil {
		return "", err
	}
	for _, q := range []string{filepath.ToSlash(rel), realRel} {
		if h := f.stateOf(q); h != "" {
			return "", fmt.Errorf("the path is in tenax's own state (%s); tenax neither edits nor quotes it", h)
		}
	}
	ignored, err := gitIgnores(ctx, f.dir, realRel)
	if err != nil {
		return "", err
	}
	if ignored {
		return "", errors.New("git ignores the path: tenax records and reverts edits with git, so it neither edits nor quotes an ignored file; edit a tracked file instead")
	}
	return rel, nil
}

// stateOf returns the protected path (or .tenax directory) holding rel,
// a slash-separated relative path, or "".
func (f fence) stateOf(rel string) string {
	for _, h := range f.protected {
		if rel == h || strings.HasPrefix(rel, h+"/") {
			return h
		}
	}
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		if part == stateDirName {
			return strings.Join(parts[:i+1], "/")
		}
	}
	return ""
}

// gitIgnores reports whether git ignores rel (relative to the real work
// directory, links resolved). A directory that is not in a git work tree
// ignores nothing. Tracked files are never ignored, as in git add.
func gitIgnores(ctx context.Context, dir, rel string) (bool, error) {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false, err
	}
	cmd := exec.CommandContext(ctx, "git", "-C", realDir, "check-ignore", "-q", "--", filepath.FromSlash(rel))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() == 1:
		return false, nil
	case strings.Contains(stderr.String(), "not a git repository"):
		return false, nil
	}
	return false, fmt.Errorf("cannot tell whether git ignores the path: %w: %s", err, strings.TrimSpace(stderr.String()))
}
