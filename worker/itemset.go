package worker

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// An item set is the idx of the items one River job runs, written as
// River's arguments carry it: ascending runs of consecutive idx, each
// "first-last" (or "idx" alone), separated by commas — "0-31" for a new
// job's group, "3,7,12-15" for a resume's. One string is one entry of the
// GIN index River keeps on its arguments, where a list of numbers would be
// one entry per item.

// itemSet builds an item set from idx added in ascending order.
type itemSet struct {
	b           []byte
	first, last int
	n           int
}

// add appends idx, which is greater than every idx added before.
func (s *itemSet) add(idx int) {
	switch {
	case s.n == 0:
		s.first, s.last = idx, idx
	case idx == s.last+1:
		s.last = idx
	default:
		s.flushRun()
		s.first, s.last = idx, idx
	}
	s.n++
}

// flushRun writes the run under way.
func (s *itemSet) flushRun() {
	if len(s.b) > 0 {
		s.b = append(s.b, ',')
	}
	s.b = strconv.AppendInt(s.b, int64(s.first), 10)
	if s.last != s.first {
		s.b = append(s.b, '-')
		s.b = strconv.AppendInt(s.b, int64(s.last), 10)
	}
}

// String returns the set as River's arguments carry it.
func (s *itemSet) String() string {
	if s.n == 0 {
		return ""
	}
	b := s.b
	s.flushRun()
	out := string(s.b)
	s.b = b
	return out
}

// reset empties the set, keeping its buffer.
func (s *itemSet) reset() { s.b, s.n = s.b[:0], 0 }

// maxSetItems bounds the items one set may name: a River job's group is
// at most maxGroupItems; the bound keeps a damaged argument ("0-999999999")
// from costing a worker its memory.
const maxSetItems = 1 << 16

// errItemSet is a River job's item set that does not parse.
var errItemSet = errors.New("not an item set")

// parseItemSet returns the idx of an item set, ascending.
func parseItemSet(s string) ([]int, error) {
	if s == "" {
		return nil, fmt.Errorf("%w: empty", errItemSet)
	}
	var idxs []int
	next := 0 // the lowest idx the next run may start at
	for run := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(run, "-")
		first, err := parseIdx(lo)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %w", errItemSet, s, err)
		}
		last := first
		if isRange {
			if last, err = parseIdx(hi); err != nil {
				return nil, fmt.Errorf("%w: %q: %w", errItemSet, s, err)
			}
		}
		if first < next || last < first {
			return nil, fmt.Errorf("%w: %q: runs must ascend", errItemSet, s)
		}
		if len(idxs)+(last-first+1) > maxSetItems {
			return nil, fmt.Errorf("%w: %q names more than %d items", errItemSet, s, maxSetItems)
		}
		for i := first; i <= last; i++ {
			idxs = append(idxs, i)
		}
		next = last + 1
	}
	return idxs, nil
}

// parseIdx parses one idx: decimal digits only, no sign.
func parseIdx(s string) (int, error) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, fmt.Errorf("idx %q is not a number", s)
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("idx %q: %w", s, err)
	}
	return int(n), nil
}
