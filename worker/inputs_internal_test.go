package worker

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/internal/pgtest"
)

// TestAGroupsInputsAreReadByTheirKeys: reading a group's 8 inputs from a
// job of 5,000 just enqueued (no statistics yet) reads those 8 rows of
// tenax_inputs, not the job's 5,000. Joined on the unnested idx alone, the
// planner hashed every input of the job for each read: 23 ms a read on a
// job of 20,000, a million rows a read on a job of a million.
func TestAGroupsInputsAreReadByTheirKeys(t *testing.T) {
	dsn := pgtest.AbsentDSN(t, "tenax_wtest_")
	ctx := t.Context()
	c, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `INSERT INTO tenax_inputs (job_id, idx, input)
		SELECT 'j', g, convert_to('{"word":"w' || g || '"}', 'UTF8') FROM generate_series(0, 4999) g`); err != nil {
		t.Fatal(err)
	}
	idxs := []int64{100, 101, 102, 103, 104, 105, 106, 107}
	rounds := []int32{1, 1, 1, 1, 1, 1, 1, 1}
	var plan []byte
	if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+groupInputsQuery, "j", idxs, rounds).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	var top []struct{ Plan planNode }
	if err := json.Unmarshal(plan, &top); err != nil || len(top) != 1 {
		t.Fatalf("EXPLAIN's JSON: %v (%s)", err, plan)
	}
	if read := top[0].Plan.rowsOf("tenax_inputs"); read > len(idxs) {
		t.Errorf("reading 8 inputs read %d rows of tenax_inputs; want the 8 asked, by the primary key:\n%s", read, plan)
	}
}

// planNode is the part of a node of EXPLAIN (FORMAT JSON) that counts the
// rows a scan read.
type planNode struct {
	Relation string     `json:"Relation Name"`
	Rows     int        `json:"Actual Rows"`
	Loops    int        `json:"Actual Loops"`
	Plans    []planNode `json:"Plans"`
}

// rowsOf sums the rows the scans of table read, over their loops.
func (n planNode) rowsOf(table string) int {
	sum := 0
	if n.Relation == table {
		sum += n.Rows * max(1, n.Loops)
	}
	for _, c := range n.Plans {
		sum += c.rowsOf(table)
	}
	return sum
}
