package main

import (
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/exitcode"
)

// TestPackageDocNamesEveryCommandAndExitCode: the command's doc listed 7
// of its 12 commands and left out exit code 4.
func TestPackageDocNamesEveryCommandAndExitCode(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(f.Doc.Text()), " ")
	for _, c := range newRootCmd(&globals{}).Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		if !strings.Contains(doc, " "+c.Name()+":") && !strings.Contains(doc, " "+c.Name()+",") {
			t.Errorf("doc.go does not list the command %q", c.Name())
		}
	}
	for _, code := range []int{exitcode.OK, exitcode.Failures, exitcode.Usage, exitcode.Aborted, exitcode.Storage, exitcode.Interrupted} {
		if !strings.Contains(doc, " "+strconv.Itoa(code)+" ") {
			t.Errorf("doc.go does not give exit code %d", code)
		}
	}
}
