package worker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/internal/pgtest"
)

// TestAGroupsInputsAreReadByTheirKeys: reading a group's 8 inputs from a
// job of 5,000 just enqueued (no statistics yet) reads those 8 rows of
// tenax_inputs and of tenax_finals, not the job's 5,000. Joined on the
// unnested idx alone, the planner hashed every input of the job for each
// read: 23 ms a read on a job of 20,000. Joined with "idx = ANY($2)" as
// well, it still scanned the job's rows by job_id and filtered them
// (5.6 ms a read on 20,000), which an earlier version of this test missed
// by counting only the rows the filter kept.
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
	for _, q := range []string{
		`INSERT INTO tenax_jobs (id, created, updated, manifest) VALUES ('j', now(), now(), '{}')`,
		`INSERT INTO tenax_inputs (job_id, idx, input)
		SELECT 'j', g, convert_to('{"word":"w' || g || '"}', 'UTF8') FROM generate_series(0, 4999) g`,
		`INSERT INTO tenax_finals (job_id, idx, round) SELECT 'j', g, 1 FROM generate_series(0, 4999) g`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	idxs := []int64{100, 101, 102, 103, 104, 105, 106, 107}
	rounds := []int32{2, 2, 2, 2, 1, 1, 1, 1}
	var plan []byte
	if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+groupInputsQuery, "j", idxs, rounds).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	var top []struct{ Plan planNode }
	if err := json.Unmarshal(plan, &top); err != nil || len(top) != 1 {
		t.Fatalf("EXPLAIN's JSON: %v (%s)", err, plan)
	}
	for _, table := range []string{"tenax_inputs", "tenax_finals"} {
		if read := top[0].Plan.rowsOf(table); read > len(idxs) {
			t.Errorf("reading 8 items read %d rows of %s; want at most the 8 asked, by the primary key:\n%s", read, table, plan)
		}
	}
}

// planNode is the part of a node of EXPLAIN (FORMAT JSON) that counts the
// rows a scan read: those it returned, those its filter removed, and
// those a bitmap index scan of the table's index found.
type planNode struct {
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Type     string     `json:"Node Type"`
	Rows     int        `json:"Actual Rows"`
	Removed  int        `json:"Rows Removed by Filter"`
	Loops    int        `json:"Actual Loops"`
	Plans    []planNode `json:"Plans"`
}

// rowsOf is the most rows any one scan of table read, over its loops.
func (n planNode) rowsOf(table string) int {
	most := 0
	switch {
	case n.Relation == table:
		most = (n.Rows + n.Removed) * max(1, n.Loops)
	case n.Type == "Bitmap Index Scan" && strings.HasPrefix(n.Index, table+"_"):
		most = n.Rows * max(1, n.Loops)
	}
	for _, c := range n.Plans {
		most = max(most, c.rowsOf(table))
	}
	return most
}
