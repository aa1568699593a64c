package breaker

import "fmt"

// State is where a breaker is in its cycle closed → open → half_open →
// closed.
type State uint8

// The states of a Breaker.
const (
	// Closed lets every call through and counts failures.
	Closed State = iota
	// Open rejects every call with ErrOpen until ResetTimeout has passed.
	Open
	// HalfOpen lets Probes trial calls through: all succeeding closes
	// the breaker, one failing opens it again.
	HalfOpen
)

var stateNames = [...]string{Closed: "closed", Open: "open", HalfOpen: "half_open"}

// String returns "closed", "open" or "half_open", as docs/web.md's metrics spell
// them.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// MarshalText writes the state as its name, for records, logs and events.
func (s State) MarshalText() ([]byte, error) {
	if int(s) >= len(stateNames) {
		return nil, fmt.Errorf("breaker: cannot marshal unknown state %d", uint8(s))
	}
	return []byte(stateNames[s]), nil
}

// UnmarshalText reads a state name written by MarshalText, so that state
// shared through a store can be read back.
func (s *State) UnmarshalText(b []byte) error {
	for i, name := range stateNames {
		if name == string(b) {
			*s = State(i)
			return nil
		}
	}
	return fmt.Errorf("breaker: unknown state %q (want closed, open or half_open)", b)
}
