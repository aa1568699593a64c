package batch

import (
	"encoding/json"
	"testing"
)

// TestALedgerOfAnEarlierVersionKeepsTheFallbackThatMovedTheItem: an item
// state written with "left" (the route a fallback that wants another
// kind of route moved the item off) reads back with the fallback in its
// tries, where the engine's routing now keeps it, so a resume still sends
// the item to a route that fits.
func TestALedgerOfAnEarlierVersionKeepsTheFallbackThatMovedTheItem(t *testing.T) {
	line := `{"idx":3,"route":"a","tries":[{"route":"b","error":"503","class":"retryable"},{"route":"a","error":"400 too long","class":"item"}],"left":{"route":"a","kind":"context_window"}}`
	var st ItemState
	if err := json.Unmarshal([]byte(line), &st); err != nil {
		t.Fatal(err)
	}
	tries := st.tries()
	if len(tries) != 2 || tries[0].Fallback != "" || tries[1].Route != "a" || tries[1].Fallback != "context_window" {
		t.Errorf("tries %+v; want b's outage without a fallback, then a's with context_window", tries)
	}
	if st.Tries[1].Fallback != "" {
		t.Errorf("tries changed the state it read: %+v", st.Tries)
	}
}
