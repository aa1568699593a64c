package fix

import (
	"slices"
	"testing"

	"github.com/tenaxhq/tenax/heal"
)

// Unrelated tests that fail with the same normalized message were grouped,
// and the fixer was told that fixing one often fixes all: a group needs a
// shared test file or location too.
func TestGroupsNeedASharedTestFileOrLocationNotOnlyAMessage(t *testing.T) {
	tests := []struct {
		name string
		errs []heal.Observed
		want [][]string // the groups' names
	}{
		{"go tests in different files", []heal.Observed{
			{Name: "TestA", Message: `a_test.go:3: config missing key "x"`},
			{Name: "TestB", Message: `b_test.go:3: config missing key "y"`},
		}, nil},
		{"go tests at the same location", []heal.Observed{
			{Name: "TestA", Message: `shared_test.go:3: config missing key "x"`},
			{Name: "TestB", Message: `shared_test.go:3: config missing key "x"`},
			{Name: "TestC", Message: `other_test.go:3: config missing key "x"`},
		}, [][]string{{"TestA", "TestB"}}},
		{"pytest tests in one test file", []heal.Observed{
			{Name: "tests/test_a.py::test_one", Message: "assert -1 == 5"},
			{Name: "tests/test_b.py::test_two", Message: "assert -2 == 6"},
			{Name: "tests/test_a.py::test_three", Message: "assert -3 == 7"},
		}, [][]string{{"tests/test_a.py::test_one", "tests/test_a.py::test_three"}}},
		{"pytest tests in different files, one source location", []heal.Observed{
			{Name: "tests/test_a.py::test_one", Message: "ZeroDivisionError: division by zero\ncalc.py:6: ZeroDivisionError"},
			{Name: "tests/test_b.py::test_two", Message: "ZeroDivisionError: division by zero\ncalc.py:6: ZeroDivisionError"},
		}, [][]string{{"tests/test_a.py::test_one", "tests/test_b.py::test_two"}}},
		{"unrelated tests with nothing but a message in common", []heal.Observed{
			{Name: "Math › adds", Message: "expect(received).toBe(expected)"},
			{Name: "Strings › joins", Message: "expect(received).toBe(expected)"},
		}, nil},
		{"a location links two clusters of one message", []heal.Observed{
			{Name: "TestA", Message: "x_test.go:3: boom\nhelper.go:9: here"},
			{Name: "TestB", Message: "y_test.go:3: boom\nhelper.go:9: here"},
			{Name: "TestC", Message: "x_test.go:3: boom\nother.go:1: here"},
		}, [][]string{{"TestA", "TestB", "TestC"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := heal.NewTracker(heal.Budget{})
			tr.Observe(tc.errs)
			var got [][]string
			for _, g := range Groups(tr.Errors()) {
				var names []string
				for _, e := range g.Errors {
					names = append(names, e.Name)
				}
				got = append(got, names)
			}
			if !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("groups %q; want %q", got, tc.want)
			}
			for _, e := range tr.Errors() {
				if g := groupOf(tr.Errors(), e); len(tc.want) == 0 && len(g) > 0 {
					t.Errorf("the fixer of %s would be told %v share its error; want no group", e.Name, g)
				}
			}
		})
	}
}
