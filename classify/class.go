package classify

import "fmt"

// Class says what a failure means for the work item that met it, and so
// what tenax does next: retry it, stop the run, record the item as failed,
// re-ask with feedback, or leave it pending.
//
// The zero value is Unknown, which no classifier returns for a non-nil
// error; it exists so that an unset field is distinguishable from a
// decision.
type Class uint8

// The classes of docs/classes.md's class table.
const (
	// Unknown is the zero Class: no decision was made.
	Unknown Class = iota
	// Retryable is a transient fault (timeouts, resets, 429 rate limits,
	// 5xx, exit 75): retried with backoff.
	Retryable
	// Fatal means the setup is wrong and no retry can help (401, 403,
	// 404 model, insufficient quota, command not found).
	Fatal
	// Item means only this item is bad (400, 413, 422, a template error).
	Item
	// Invalid means the call worked but its output failed validation:
	// re-asked with feedback by the heal loop.
	Invalid
	// Canceled means the run was interrupted: the item stays pending.
	Canceled
)

var classNames = [...]string{
	Unknown:   "unknown",
	Retryable: "retryable",
	Fatal:     "fatal",
	Item:      "item",
	Invalid:   "invalid",
	Canceled:  "canceled",
}

// String returns the class's name as docs/classes.md spells it ("retryable",
// "fatal", "item", "invalid", "canceled").
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// MarshalText writes the class as its name, so records and logs carry words.
func (c Class) MarshalText() ([]byte, error) {
	if int(c) >= len(classNames) {
		return nil, fmt.Errorf("classify: cannot marshal unknown class %d", uint8(c))
	}
	return []byte(classNames[c]), nil
}

// UnmarshalText reads a class name written by MarshalText.
func (c *Class) UnmarshalText(b []byte) error {
	parsed, err := ParseClass(string(b))
	if err != nil {
		return err
	}
	*c = parsed
	return nil
}

// ParseClass returns the Class named s ("retryable", "fatal", "item",
// "invalid", "canceled"; "" and "unknown" give Unknown).
func ParseClass(s string) (Class, error) {
	if s == "" {
		return Unknown, nil
	}
	for i, name := range classNames {
		if name == s {
			return Class(i), nil
		}
	}
	return Unknown, fmt.Errorf("classify: unknown class %q (want retryable, fatal, item, invalid or canceled)", s)
}
