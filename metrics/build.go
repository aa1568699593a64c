package metrics

import "github.com/prometheus/client_golang/prometheus"

// Build describes the running binary, as `tenax version` prints it.
type Build struct {
	Version, Revision, GoVersion string
}

// RegisterBuild registers tenax_build_info on reg: a gauge of 1 whose
// labels say which tenax serves the metrics, so that a dashboard can tell
// workers of different versions apart (and join on it).
func RegisterBuild(reg prometheus.Registerer, b Build) error {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "tenax_build_info",
		Help:        "The tenax binary serving these metrics: always 1, its version, VCS revision and Go version as labels.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion},
	})
	g.Set(1)
	return reg.Register(g)
}
