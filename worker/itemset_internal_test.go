package worker

import (
	"errors"
	"slices"
	"testing"
)

func TestItemSetWritesRunsOfConsecutiveIdx(t *testing.T) {
	for _, tc := range []struct {
		idxs []int
		want string
	}{
		{nil, ""},
		{[]int{5}, "5"},
		{[]int{0, 1, 2, 3}, "0-3"},
		{[]int{3, 7, 12, 13, 14, 15}, "3,7,12-15"},
		{[]int{1, 2, 4, 5, 9}, "1-2,4-5,9"},
	} {
		var s itemSet
		for _, i := range tc.idxs {
			s.add(i)
		}
		if got := s.String(); got != tc.want {
			t.Errorf("the set of %v is %q, want %q", tc.idxs, got, tc.want)
		}
		if s.String() != tc.want {
			t.Errorf("String changed the set of %v on a second call: %q", tc.idxs, s.String())
		}
		if tc.want == "" {
			continue
		}
		back, err := parseItemSet(tc.want)
		if err != nil || !slices.Equal(back, tc.idxs) {
			t.Errorf("parseItemSet(%q) = %v, %v; want %v", tc.want, back, err, tc.idxs)
		}
	}
}

func TestItemSetResetStartsAnEmptySet(t *testing.T) {
	var s itemSet
	s.add(1)
	s.add(2)
	s.reset()
	s.add(9)
	if got := s.String(); got != "9" {
		t.Errorf("after reset the set is %q, want %q", got, "9")
	}
}

func TestParseItemSetRefusesWhatItDidNotWrite(t *testing.T) {
	for _, s := range []string{"", ",", "1,", "-1", "a", "1-", "3-1", "5,2", "1-3,3", "+4", "1 - 2", "0-99999999", "99999999999"} {
		if idxs, err := parseItemSet(s); !errors.Is(err, errItemSet) {
			t.Errorf("parseItemSet(%q) = %v, %v; want an errItemSet", s, idxs, err)
		}
	}
}

func FuzzParseItemSet(f *testing.F) {
	for _, s := range []string{"0-31", "3,7,12-15", "5", "1-2,4-5,9", "0-65535", "1-3,3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		idxs, err := parseItemSet(s)
		if err != nil {
			return
		}
		if len(idxs) == 0 || len(idxs) > maxSetItems {
			t.Fatalf("parseItemSet(%q) gave %d items", s, len(idxs))
		}
		var set itemSet
		for i, idx := range idxs {
			if i > 0 && idx <= idxs[i-1] {
				t.Fatalf("parseItemSet(%q) is not ascending at %d: %v", s, i, idxs)
			}
			set.add(idx)
		}
		back, err := parseItemSet(set.String())
		if err != nil || !slices.Equal(back, idxs) {
			t.Fatalf("%q parsed to %v, written as %q, parsed back to %v, %v", s, idxs, set.String(), back, err)
		}
	})
}
