package retry

import "fmt"

// Jitter says how a backoff delay is randomized so that many items that
// failed together do not retry together. The zero value is
// JitterProportional, the default (docs/spec.md, "retry").
type Jitter uint8

// The jitter modes. For a computed delay d:
const (
	// JitterProportional draws from d × U(0.5, 1.5): on average d, never
	// less than half of it.
	JitterProportional Jitter = iota
	// JitterFull draws from U(0, d): the widest spread, and the lowest
	// average wait (d/2).
	JitterFull
	// JitterEqual draws from d/2 + U(0, d/2): at least half of d.
	JitterEqual
	// JitterDecorrelated is AWS's "decorrelated jitter": the next delay
	// is drawn from U(Base, 3 × the previous delay), capped at Max. It
	// ignores the exponential term and grows from its own history.
	JitterDecorrelated
	// JitterNone uses d as it is.
	JitterNone
)

var jitterNames = [...]string{
	JitterProportional: "proportional",
	JitterFull:         "full",
	JitterEqual:        "equal",
	JitterDecorrelated: "decorrelated",
	JitterNone:         "none",
}

// String returns the mode's name as job specs spell it ("proportional",
// "full", "equal", "decorrelated", "none").
func (j Jitter) String() string {
	if int(j) < len(jitterNames) {
		return jitterNames[j]
	}
	return fmt.Sprintf("jitter(%d)", uint8(j))
}

// MarshalText writes the mode as its name.
func (j Jitter) MarshalText() ([]byte, error) {
	if int(j) >= len(jitterNames) {
		return nil, fmt.Errorf("retry: cannot marshal unknown jitter %d", uint8(j))
	}
	return []byte(jitterNames[j]), nil
}

// UnmarshalText reads a mode name, as ParseJitter does, so a Jitter field
// can be read straight from YAML or JSON.
func (j *Jitter) UnmarshalText(b []byte) error {
	parsed, err := ParseJitter(string(b))
	if err != nil {
		return err
	}
	*j = parsed
	return nil
}

// ParseJitter returns the mode named s: "proportional", "full", "equal",
// "decorrelated" or "none". The empty string gives the default,
// JitterProportional.
func ParseJitter(s string) (Jitter, error) {
	if s == "" {
		return JitterProportional, nil
	}
	for i, name := range jitterNames {
		if name == s {
			return Jitter(i), nil
		}
	}
	return JitterProportional, fmt.Errorf("retry: unknown jitter %q (want proportional, full, equal, decorrelated or none)", s)
}
