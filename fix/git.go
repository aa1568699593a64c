package fix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Tree is the git work tree a fix run edits. Every attempt's edit is
// recorded as the difference between two snapshots of the tree (git tree
// objects written through an index of tenax's own, so the user's index is
// never touched), which is also how an edit is undone.
type Tree struct {
	// Root is the work tree's top directory.
	Root string
	// exclude are pathspecs of what is not the user's work: tenax's home
	// when it lies inside the tree; excludeRel the same paths, relative.
	exclude, excludeRel []string
	// scope are the only paths the tree covers, relative to Root; none is
	// the whole tree.
	scope []string
	// index is the private index file snapshots are written through.
	index string
}

// ErrNotGit means the work directory is not inside a git work tree.
var ErrNotGit = errors.New("not inside a git work tree")

// OpenTree opens the git work tree holding dir. Paths under any of
// exclude (tenax's home) are left out of snapshots and of the dirty check.
// index is where the private index lives (relative to the current
// directory, as every path given here). Scope, when set, limits the
// tree to these paths (relative to dir): a per-item loop sees, records
// and reverts only its own files.
func OpenTree(ctx context.Context, dir string, exclude []string, index string, scope ...string) (*Tree, error) {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return nil, fmt.Errorf("fix: %s: %w (tenax fix records and reverts every edit with git: run `git init` and commit your work first)", dir, ErrNotGit)
	}
	root := strings.TrimSpace(string(out))
	if index != "" {
		// git runs in root: a relative index (under a relative home)
		// would be looked for there, not where the run keeps it.
		if index, err = filepath.Abs(index); err != nil {
			return nil, fmt.Errorf("fix: %w", err)
		}
	}
	t := &Tree{Root: root, index: index}
	for _, p := range scope {
		abs := p
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(dir, p)
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil {
			// dir may be reached through a link that root is not.
			if r, e := filepath.EvalSymlinks(dir); e == nil {
				rel, err = filepath.Rel(root, filepath.Join(r, p))
			}
		}
		if err != nil || strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("fix: path %s is outside the git work tree %s", p, root)
		}
		t.scope = append(t.scope, filepath.ToSlash(rel))
	}
	for _, ex := range exclude {
		abs, err := filepath.Abs(ex)
		if err != nil {
			continue
		}
		// Compare resolved paths: /tmp may be a link.
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			abs = r
		}
		rootReal := root
		if r, err := filepath.EvalSymlinks(root); err == nil {
			rootReal = r
		}
		rel, err := filepath.Rel(rootReal, abs)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		t.exclude = append(t.exclude, ":(exclude)"+filepath.ToSlash(rel))
		t.excludeRel = append(t.excludeRel, filepath.ToSlash(rel))
	}
	return t, nil
}

// git runs git in the tree's root with extra environment.
func (t *Tree) git(ctx context.Context, stdin []byte, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = t.Root
	cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// pathspec is the tree's scope without the excluded paths.
func (t *Tree) pathspec() []string {
	return append(append([]string{"--"}, t.paths()...), t.exclude...)
}

// paths is the scope, or the whole tree.
func (t *Tree) paths() []string {
	if len(t.scope) > 0 {
		return t.scope
	}
	return []string{"."}
}

// Dirty returns the paths with uncommitted changes (git status
// --porcelain), tenax's home excepted.
//
// An untracked file named in readOnly (absolute, or relative to the
// current directory) is none: tenax only reads it (a fix spec written a
// minute ago, a --context @FILE), so no edit can mix with it. The same
// file tracked and changed still counts.
func (t *Tree) Dirty(ctx context.Context, readOnly ...string) ([]string, error) {
	out, err := t.git(ctx, nil, nil, append([]string{"status", "--porcelain", "--untracked-files=all"}, t.pathspec()...)...)
	if err != nil {
		return nil, err
	}
	only := map[string]bool{}
	for _, p := range readOnly {
		if abs, err := filepath.Abs(p); err == nil {
			if rel, err := filepath.Rel(t.Root, abs); err == nil {
				only[filepath.ToSlash(rel)] = true
			}
		}
	}
	var paths []string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if len(line) <= 3 || strings.HasPrefix(line, "?? ") && only[line[3:]] {
			continue
		}
		paths = append(paths, line[3:])
	}
	return paths, nil
}

// Snapshot writes the work tree as it is now (tracked and untracked files,
// ignored ones excepted) as a git tree object and returns its id.
func (t *Tree) Snapshot(ctx context.Context) (string, error) {
	env := []string{"GIT_INDEX_FILE=" + t.index}
	// An exclude pathspec naming an ignored directory makes git add fail,
	// so tenax's home is taken out of the private index afterwards.
	// A scope path that does not exist (a file the fixer will create, or
	// has deleted) would make git add fail: it is taken out of the index.
	var present, missing []string
	for _, p := range t.paths() {
		if _, err := os.Lstat(filepath.Join(t.Root, p)); err == nil || p == "." {
			present = append(present, p)
		} else {
			missing = append(missing, p)
		}
	}
	if len(present) > 0 {
		if _, err := t.git(ctx, nil, env, append([]string{"add", "-A", "--"}, present...)...); err != nil {
			return "", err
		}
	}
	if len(missing) > 0 {
		if _, err := t.git(ctx, nil, env, append([]string{"rm", "-r", "-q", "--cached", "--ignore-unmatch", "--"}, missing...)...); err != nil {
			return "", err
		}
	}
	if len(t.excludeRel) > 0 {
		// -f: git refuses to unstage a file whose staged content differs
		// from both the file and HEAD; --cached touches only the index.
		args := append([]string{"rm", "-r", "-q", "-f", "--cached", "--ignore-unmatch", "--"}, t.excludeRel...)
		if _, err := t.git(ctx, nil, env, args...); err != nil {
			return "", err
		}
	}
	out, err := t.git(ctx, nil, env, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Diff returns the edit from snapshot a to snapshot b as a binary-safe
// patch (git diff --binary), and the paths it changes.
func (t *Tree) Diff(ctx context.Context, a, b string) ([]byte, []string, error) {
	if a == b {
		return nil, nil, nil
	}
	patch, err := t.git(ctx, nil, nil, "diff", "--binary", "--full-index", "--no-color", "--no-ext-diff", a, b)
	if err != nil {
		return nil, nil, err
	}
	names, err := t.git(ctx, nil, nil, "diff", "--name-only", "--no-color", a, b)
	if err != nil {
		return nil, nil, err
	}
	var files []string
	for _, n := range strings.Split(strings.TrimSpace(string(names)), "\n") {
		if n != "" {
			files = append(files, n)
		}
	}
	return patch, files, nil
}

// Revert undoes patch in the work tree (git apply -R), leaving the index
// alone.
func (t *Tree) Revert(ctx context.Context, patch []byte) error {
	if len(patch) == 0 {
		return nil
	}
	_, err := t.git(ctx, patch, nil, "apply", "-R", "--binary", "--whitespace=nowarn", "-")
	return err
}

// Commit commits files (paths relative to the root) with message, and
// nothing else the user may have staged or changed.
func (t *Tree) Commit(ctx context.Context, files []string, message string) error {
	if len(files) == 0 {
		return nil
	}
	if _, err := t.git(ctx, nil, nil, append([]string{"add", "-A", "--"}, files...)...); err != nil {
		return err
	}
	_, err := t.git(ctx, nil, nil, append([]string{"commit", "-q", "--no-verify", "-m", message, "--"}, files...)...)
	return err
}
