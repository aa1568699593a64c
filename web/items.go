package web

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/store"
)

const (
	// ItemsPerPage is how many items one page of the item list shows.
	ItemsPerPage = 50
	// itemText bounds the input and error a row of the list keeps.
	itemText = 160
)

// itemFilter is what the item list is narrowed to; the zero filter lists
// every item.
type itemFilter struct {
	// Outcome is succeeded, failed, pending or "" for any.
	Outcome string
	// Class is a failure class (retryable, fatal, item, invalid).
	Class string
	// Fingerprint matches error fingerprints starting with it, as
	// `tenax resume --fingerprint` does.
	Fingerprint string
	// Route is the route that produced the item's record (docs/routes.md).
	Route string
	// Text is searched for, case-insensitively, in the error and the input.
	Text string
	// Page counts from 1.
	Page int
}

func parseItemFilter(q url.Values) itemFilter {
	f := itemFilter{Outcome: q.Get("outcome"), Class: q.Get("class"), Fingerprint: strings.TrimSpace(q.Get("fingerprint")),
		Route: strings.TrimSpace(q.Get("route")), Text: strings.TrimSpace(q.Get("q"))}
	f.Page, _ = strconv.Atoi(q.Get("page"))
	f.Page = max(f.Page, 1)
	return f
}

// query writes the filter back as a query string, at page p.
func (f itemFilter) query(p int) string {
	v := url.Values{}
	for k, s := range map[string]string{"outcome": f.Outcome, "class": f.Class, "fingerprint": f.Fingerprint, "route": f.Route, "q": f.Text} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if p > 1 {
		v.Set("page", strconv.Itoa(p))
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// matches reports whether rec, an item's latest record, passes the filter.
func (f itemFilter) matches(rec *store.Record, fp string) bool {
	outcome := "succeeded"
	if rec.Failed() {
		outcome = "failed"
	}
	switch {
	case f.Outcome != "" && f.Outcome != outcome:
		return false
	case f.Class != "" && (!rec.Failed() || rec.Class.String() != f.Class):
		return false
	case f.Fingerprint != "" && (fp == "" || !strings.HasPrefix(fp, f.Fingerprint)):
		return false
	case f.Route != "" && rec.Route != f.Route:
		return false
	case f.Text != "":
		t := strings.ToLower(f.Text)
		return strings.Contains(strings.ToLower(rec.Error), t) || strings.Contains(strings.ToLower(string(rec.Input)), t)
	}
	return true
}

// itemRow is one item of the list: its latest record, shortened.
type itemRow struct {
	Idx         int
	ID          string
	Outcome     string
	Class       string
	Fingerprint string
	Route       string
	Error       string
	Input       string
	Attempts    int
	Heals       int
	Duration    time.Duration
	Finished    time.Time
}

// itemsPage is what the item list renders.
type itemsPage struct {
	ID     string
	Filter itemFilter
	Rows   []itemRow
	// Matched counts the items that pass the filter, over every page.
	Matched int
	// Failed counts the failed items among them: what "retry these
	// failures" re-runs.
	Failed     int
	Page       int
	Pages      int
	Prev, Next string // the neighbour pages' queries, "" at an end
	// Retry says whether the page may re-run the failures listed, and
	// why not; RetryQuery and RetryCommand say which re-run that is.
	// RetryCommand is "" when no resume re-runs exactly these failures.
	Retry        retryAbility
	RetryQuery   string
	RetryCommand string
	CSRF         string
}

// listItems reads every item's latest record from the store and returns
// the page of those that pass f, in idx order. Only the matching items'
// shortened rows are kept while reading. Pending items (no record) are
// listed when f asks for them, or for no outcome without other criteria.
func listItems(ctx context.Context, st store.Store, id string, f itemFilter) (*itemsPage, error) {
	j, err := st.OpenReadOnly(ctx, id)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	matched := map[int]itemRow{}
	seen := map[int]bool{}
	err = j.Scan(ctx, func(rec store.Record) error {
		// Records come in the order items finished: a later record of
		// an idx replaces the earlier one.
		seen[rec.Idx] = true
		fp := ""
		if rec.Failed() {
			fp = rec.Fingerprint
			if fp == "" {
				fp = heal.Fingerprint(rec.Class.String(), rec.Error)
			}
		}
		if !f.matches(&rec, fp) {
			delete(matched, rec.Idx)
			return nil
		}
		row := itemRow{Idx: rec.Idx, ID: rec.ID, Outcome: "succeeded", Fingerprint: fp, Route: rec.Route, Attempts: rec.Attempts,
			Heals: rec.HealAttempts, Duration: time.Duration(rec.DurationMS) * time.Millisecond, Finished: rec.FinishedAt,
			Input: truncate(string(rec.Input), itemText)}
		if rec.Failed() {
			row.Outcome, row.Class, row.Error = "failed", rec.Class.String(), truncate(firstLine(rec.Error), itemText)
		}
		matched[rec.Idx] = row
		return nil
	})
	if err != nil {
		return nil, err
	}
	if f.Outcome == "pending" || f.Outcome == "" && f.Class == "" && f.Fingerprint == "" && f.Route == "" && f.Text == "" {
		for idx := range j.Manifest().Items {
			if !seen[idx] {
				matched[idx] = itemRow{Idx: idx, Outcome: "pending"}
			}
		}
	}
	p := &itemsPage{ID: id, Filter: f, Matched: len(matched)}
	idxs := make([]int, 0, len(matched))
	for idx, r := range matched {
		idxs = append(idxs, idx)
		if r.Outcome == "failed" {
			p.Failed++
		}
	}
	slices.Sort(idxs)
	p.Pages = max(1, (len(idxs)+ItemsPerPage-1)/ItemsPerPage)
	p.Page = min(f.Page, p.Pages)
	for _, idx := range idxs[min((p.Page-1)*ItemsPerPage, len(idxs)):min(p.Page*ItemsPerPage, len(idxs))] {
		p.Rows = append(p.Rows, matched[idx])
	}
	if p.Page > 1 {
		p.Prev = f.query(p.Page - 1)
		if p.Prev == "" {
			p.Prev = "?"
		}
	}
	if p.Page < p.Pages {
		p.Next = f.query(p.Page + 1)
	}
	return p, nil
}
