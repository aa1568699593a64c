package validate

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
)

// Validator checks one output. It returns nil when the output is usable,
// an *Error when it is not, and any other error when the check itself
// could not be made (see the package documentation). A Validator must be
// safe for concurrent use: the engine validates many items at once.
type Validator interface {
	Validate(ctx context.Context, output json.RawMessage) error
}

// Names of the validators, as Error.Validator reports them.
const (
	KindJSONSchema = "json_schema"
	KindRegex      = "regex"
	KindCommand    = "command"
)

// Error reports an output that failed validation: the class invalid. The
// heal loop shows it to the task when it asks again, so its text says what
// is wrong in terms a model (or a person) can act on.
type Error struct {
	// Validator names the check that failed: "json_schema", "regex" or
	// "command".
	Validator string
	// Message says what failed, in one line. A command's message ends
	// with its stderr's headline (classify.Headline).
	Message string
	// Details are the schema violations, one per failing location
	// ("at '/es': missing property 'es'"), sorted, at most 20 (a last
	// line counts the rest). Empty for other validators.
	Details []string
	// StderrText is the command validator's stderr (its stdout when it
	// wrote nothing to stderr), capped; "" for other validators. It is a
	// field apart from Message so the heal feedback can show its first
	// lines; the Stderr method returns it.
	StderrText string
}

// Error returns the message followed by the details, if any.
func (e *Error) Error() string {
	if len(e.Details) > 0 {
		return e.Message + ": " + strings.Join(e.Details, "; ")
	}
	return e.Message
}

// Stderr returns the command validator's captured stderr, so the heal
// feedback can show its first lines. It implements classify.StderrCarrier.
func (e *Error) Stderr() string { return e.StderrText }

// All returns a Validator that runs vs in order and returns the first
// error; nil validators are skipped. All() accepts every output.
func All(vs ...Validator) Validator {
	chain := make(all, 0, len(vs))
	for _, v := range vs {
		if v != nil {
			chain = append(chain, v)
		}
	}
	return chain
}

type all []Validator

func (a all) Validate(ctx context.Context, output json.RawMessage) error {
	for _, v := range a {
		if err := v.Validate(ctx, output); err != nil {
			return err
		}
	}
	return nil
}

// outputText returns the text a user sees in output: the decoded string
// of a JSON string, the compact JSON of any other value. ok is false when
// output is not JSON at all, and then text is output as it is.
func outputText(output json.RawMessage) (text []byte, ok bool) {
	if s, isString, ok := decodeString(output); isString {
		return s, ok
	}
	trimmed := bytes.TrimSpace(output)
	var buf bytes.Buffer
	buf.Grow(len(trimmed))
	if err := json.Compact(&buf, trimmed); err != nil {
		return output, false
	}
	return buf.Bytes(), true
}

// decodeString decodes output when it is a JSON string. isString reports
// that it looks like one; ok that it decoded (else s is output as it is).
func decodeString(output json.RawMessage) (s []byte, isString, ok bool) {
	trimmed := bytes.TrimSpace(output)
	if len(trimmed) == 0 || trimmed[0] != '"' {
		return output, false, false
	}
	var str string
	if err := json.Unmarshal(trimmed, &str); err != nil {
		return output, true, false
	}
	return []byte(str), true, true
}
