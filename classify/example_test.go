package classify_test

import (
	"errors"
	"fmt"

	"github.com/tenaxhq/tenax/classify"
)

// apiError is how a task reports a failed HTTP call: it carries the
// status and the provider's error code, which the classifier reads.
type apiError struct {
	Status int
	Code   string
	Msg    string
}

func (e *apiError) Error() string        { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Msg) }
func (e *apiError) HTTPStatus() int      { return e.Status }
func (e *apiError) ProviderCode() string { return e.Code }

func Example() {
	for _, err := range []error{
		&apiError{Status: 429, Code: "rate_limit_exceeded", Msg: "Rate limit reached"},
		&apiError{Status: 429, Code: "insufficient_quota", Msg: "You exceeded your current quota"},
		fmt.Errorf("item 12: %w", &apiError{Status: 400, Code: "context_length_exceeded", Msg: "too long"}),
		fmt.Errorf("item 13: %w", &apiError{Status: 503, Msg: "Service Unavailable"}),
		classify.WithClass(errors.New(`template: no field "simplified"`), classify.Item, "template"),
		errors.New("read tcp: connection reset by peer"),
	} {
		fmt.Println(classify.Classify(err))
	}
	// Output:
	// retryable (status 429 code rate_limit_exceeded)
	// fatal (status 429 code insufficient_quota)
	// item (status 400 code context_length_exceeded)
	// retryable (status 503)
	// item (marked: template)
	// retryable (keyword "connection reset")
}

func ExampleNewRule() {
	// A job's script fails with "database is locked" when another run
	// holds the database: worth retrying, though nothing else says so.
	locked, err := classify.NewRule("db locked", "database is locked", nil, nil, nil, "retryable")
	if err != nil {
		fmt.Println(err)
		return
	}
	c := classify.Classifier{Rules: []classify.Rule{locked}}
	fmt.Println(c.Classify(errors.New("exit status 1: database is locked")))
	fmt.Println(c.Classify(errors.New("exit status 1: syntax error")))

	_, err = classify.NewRule("typo", "", []int{500}, nil, nil, "transient")
	fmt.Println(err)
	// Output:
	// retryable (rule "db locked")
	// item (no signal)
	// classify: rule "typo": class: unknown class "transient" (want retryable, fatal, item, invalid or canceled)
}

func ExampleDescribe() {
	err := fmt.Errorf("item 152: %w", &apiError{Status: 401, Code: "invalid_api_key", Msg: "Incorrect API key provided"})
	d := classify.Describe(err)
	fmt.Println(d.Status, d.Code)
	for _, layer := range d.Chain {
		fmt.Println(layer)
	}
	// Output:
	// 401 invalid_api_key
	// item 152: 401 invalid_api_key: Incorrect API key provided
	// 401 invalid_api_key: Incorrect API key provided
}
