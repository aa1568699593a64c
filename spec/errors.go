package spec

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem in a spec, at the line and column (1-based) of the
// offending key or value.
type Error struct {
	File string
	Line int
	Col  int
	// Msg says what is wrong, naming the key's path ("concurrency.max").
	Msg string
	// Suggestion is the near-miss the user probably meant, or "".
	Suggestion string
}

// Error formats the problem as `file:line:col: msg (did you mean "x"?)`.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	if e.Suggestion != "" {
		fmt.Fprintf(&b, " (did you mean %q?)", e.Suggestion)
	}
	return b.String()
}

// Errors is every problem found in a spec, in file order.
type Errors []*Error

// Error writes one problem per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, so errors.As finds a *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// sorted orders the problems by position, dropping exact duplicates.
func (es Errors) sorted() Errors {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	return slices.CompactFunc(es, func(a, b *Error) bool { return *a == *b })
}

// maxErrors bounds the problems reported for one spec: a file that is not
// a spec at all (a data file given by mistake) would otherwise print one
// line per key.
const maxErrors = 20

// capped keeps the first maxErrors problems and says how many more there
// are, at the position of the first one left out.
func (es Errors) capped() Errors {
	if len(es) <= maxErrors {
		return es
	}
	next := es[maxErrors]
	return append(es[:maxErrors:maxErrors], &Error{
		File: next.File, Line: next.Line, Col: next.Col,
		Msg: fmt.Sprintf("… and %d more problems (fix the ones above first)", len(es)-maxErrors),
	})
}

// suggest returns the candidate closest to word when it is within an edit
// distance of 2 (ignoring case), else "". Short words need a closer match,
// under half their length, so that "sql" does not suggest "llm". Ties go to
// the earlier candidate.
func suggest(word string, candidates []string) string {
	best, bestDist := "", 3
	lower := strings.ToLower(word)
	for _, c := range candidates {
		d := distance(lower, strings.ToLower(c))
		if d < bestDist && 2*d < len([]rune(word)) {
			best, bestDist = c, d
		}
	}
	if best == word {
		return ""
	}
	return best
}

// Suggest returns the candidate closest to word, as the spec's own "did you
// mean" suggestions choose it, or "" when none is close: for a template
// field an item lacks, the field it probably meant.
func Suggest(word string, candidates []string) string { return suggest(word, candidates) }

// distance is the optimal string alignment (restricted Damerau-Levenshtein)
// distance between a and b, in runes: insertions, deletions, substitutions
// and transpositions of adjacent runes each cost 1.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rows suffice: the current one, and two back for
	// transpositions.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
