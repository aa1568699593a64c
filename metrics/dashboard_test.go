package metrics_test

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/metrics"
	"github.com/tenaxhq/tenax/worker"
)

// describedNames records the names of every series described to it: a
// Registerer that registers nothing.
type describedNames map[string]bool

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (n describedNames) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		n[fqName.FindStringSubmatch(d.String())[1]] = true
	}
	return nil
}

func (n describedNames) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		n.Register(c)
	}
}

func (n describedNames) Unregister(prometheus.Collector) bool { return false }

type idleWorker struct{}

func (idleWorker) ID() string            { return "w" }
func (idleWorker) Status() worker.Status { return worker.Status{} }

// exported returns the name of every series tenax exports: a run's and a
// worker's (Jobs, RegisterWorker), tenax ui's (Stored) and
// tenax_build_info.
func exported(t *testing.T) describedNames {
	names := describedNames{}
	metrics.NewJobs(names)
	if err := metrics.RegisterWorker(names, idleWorker{}); err != nil {
		t.Fatal(err)
	}
	names.MustRegister(&metrics.Stored{})
	if err := metrics.RegisterBuild(names, metrics.Build{}); err != nil {
		t.Fatal(err)
	}
	return names
}

// seriesName finds the series a query names.
var seriesName = regexp.MustCompile(`\btenax_[a-z0-9_]+`)

// TestTheDashboardQueriesRealSeries reads docs/grafana-dashboard.json and
// checks that every series its queries name (a histogram's _bucket, _sum
// and _count included) is one tenax exports, and that every panel asks
// for something.
func TestTheDashboardQueriesRealSeries(t *testing.T) {
	data, err := os.ReadFile("../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct{ Definition string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("docs/grafana-dashboard.json: %v", err)
	}
	names := exported(t)
	check := func(where, query string) {
		found := seriesName.FindAllString(query, -1)
		if len(found) == 0 {
			t.Errorf("%s: the query %q names no tenax series", where, query)
		}
		for _, n := range found {
			base := n
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(n, suffix); ok && names[b] {
					base = b
				}
			}
			if !names[base] {
				t.Errorf("%s: the query %q names %s, which tenax does not export (it exports %v)", where, query, n, slices.Sorted(maps.Keys(names)))
			}
		}
	}
	if len(dash.Panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			check("panel "+p.Title, q.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		check("variable", v.Definition)
	}
}
