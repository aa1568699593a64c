package breaker

// Share is the trip rule for outcomes that arrive together, where no
// order says which failure came first and a count of consecutive
// failures means nothing: the answers of one batch wave. It trips when at
// least Minimum of the outcomes, and at least Share of them, failed with
// one error (one fingerprint): the setup's fault (a spent credit balance,
// a revoked key), not the items'.
type Share struct {
	// Share is the least fraction of the outcomes, in (0, 1].
	Share float64
	// Minimum is the least number of outcomes with one error.
	Minimum int
}

// Trips returns the fingerprint with which enough of total outcomes
// failed to trip, and how many failed with it; ok is false when none did.
// failures counts the failed outcomes by fingerprint. Of two
// fingerprints with as many failures, the smaller trips, so the answer
// does not depend on map order.
func (s Share) Trips(total int, failures map[string]int) (fingerprint string, n int, ok bool) {
	for fp, c := range failures {
		if c > n || c == n && fp < fingerprint {
			fingerprint, n = fp, c
		}
	}
	if n == 0 || n < s.Minimum || float64(n) < s.Share*float64(total) {
		return "", 0, false
	}
	return fingerprint, n, true
}
