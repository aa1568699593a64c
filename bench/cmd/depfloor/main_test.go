package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDepfloorLinksWhatTenaxLinks holds the floor to its meaning: it is only
// the libraries' share of tenax's start-up while it links the same outside
// packages, standard ones included, as cmd/tenax.
func TestDepfloorLinksWhatTenaxLinks(t *testing.T) {
	tenax := outside(t, "../../..", "./cmd/tenax")
	floor := outside(t, ".", ".")
	var onlyTenax, onlyFloor []string
	for _, p := range tenax {
		if _, found := slices.BinarySearch(floor, p); !found {
			onlyTenax = append(onlyTenax, p)
		}
	}
	for _, p := range floor {
		if _, found := slices.BinarySearch(tenax, p); !found {
			onlyFloor = append(onlyFloor, p)
		}
	}
	if len(onlyTenax)+len(onlyFloor) > 0 {
		t.Errorf("depfloor must import what cmd/tenax imports:\nadd a blank import of %q\nremove %q",
			onlyTenax, onlyFloor)
	}
}

// outside lists, sorted, the packages pkg links from outside tenax's module,
// as go list -deps run in dir gives them.
func outside(t *testing.T, dir, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s in %s: %v", pkg, dir, err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		if !strings.HasPrefix(p, "github.com/tenaxhq/tenax") {
			pkgs = append(pkgs, p)
		}
	}
	slices.Sort(pkgs)
	return pkgs
}
