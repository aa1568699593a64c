package funclen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines is the length from which a function needs a reason.
const maxLines = 80

// long lists the functions allowed to run maxLines or more, by file and
// name (Type.Method for a method), each with its reason, which a
// "// Long:" line beside the function repeats for its reader.
var long = map[string]string{
	"worker/worker.go Worker.Run":     "a worker's life in order: register, River client, heartbeat, outage watch, stop",
	"engine/engine.go dispatcher.run": "the dispatch loop's one select over pulls, settles and stops, so its wake-ups read together",
	"task/llm/llm.go New":             "provider, transport and SDK options wired in one place, a case per provider",
}

// TestNoLongFunctionWithoutAReason: 27 functions ran 80 lines or more
// (issue 21), led by a 243-line byte scanner; a new one must be split or
// listed in long with its reason.
func TestNoLongFunctionWithoutAReason(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == "bench" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			key := filepath.ToSlash(rel) + " " + funcName(fd)
			if n < maxLines {
				continue
			}
			seen[key] = true
			if long[key] == "" {
				t.Errorf("%s runs %d lines: split it, or list it in long with the reason it stays long", key, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for key := range long {
		if !seen[key] {
			t.Errorf("%s is listed in long but is no longer %d lines or more: remove it from the list", key, maxLines)
		}
	}
}

// funcName is fd's name, Type.Method for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}
