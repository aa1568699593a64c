package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
)

// TestStatusJSONShape pins the tenax.status/v1 names a script reads: a Go
// field renamed must not rename them.
func TestStatusJSONShape(t *testing.T) {
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	r := &Report{
		Manifest:  store.Manifest{ID: "job_1", Name: "n", State: store.StateFailed, Items: 3, Created: at},
		Succeeded: 1, Failed: 2, Pending: 0,
		ByClass:  map[classify.Class]int{classify.Fatal: 2},
		Attempts: map[int]int{1: 1, 3: 2},
		Groups:   []ErrorGroup{{Fingerprint: "abc", Class: classify.Fatal, Count: 2, Normalized: "no N", Example: "no 7", ExampleIdx: 2}},
		First:    at, Began: at.Add(-time.Second), Last: at.Add(time.Second), Busy: 3 * time.Second,
	}
	data, err := json.Marshal(r.JSON())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"schema":"tenax.status/v1"`, `"id":"job_1"`, `"state":"failed"`,
		`"outcomes":{"succeeded":1,"failed":2,"pending":0}`, `"failed_by_class":{"fatal":2}`,
		`"error_groups":[{"fingerprint":"abc","class":"fatal","count":2,"normalized":"no N","example":"no 7","example_idx":2}]`,
		`"attempts":{"1":1,"3":2}`, `"busy_seconds":3`, `"items_per_second":1.5`,
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("status JSON lacks %s:\n%s", want, data)
		}
	}
	empty, _ := json.Marshal((&Report{Manifest: store.Manifest{ID: "job_2", State: store.StateRunning}}).JSON())
	for _, want := range []string{`"failed_by_class":{}`, `"error_groups":[]`, `"attempts":{}`} {
		if !strings.Contains(string(empty), want) {
			t.Errorf("a job without records: JSON lacks %s:\n%s", want, empty)
		}
	}
	if strings.Contains(string(empty), `"time"`) {
		t.Errorf("a job without records has a time:\n%s", empty)
	}
}
