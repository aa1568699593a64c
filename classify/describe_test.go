package classify

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func TestDescribe(t *testing.T) {
	apiErr := &httpErr{
		status:    401,
		code:      "invalid_api_key",
		msg:       "401 Unauthorized: Incorrect API key provided",
		body:      `{"error":{"code":"invalid_api_key"}}`,
		requestID: "req_123",
	}
	killed := &exitErr{code: -1, signal: "killed", stderr: "partial output\n"}
	tests := []struct {
		name string
		err  error
		want Details
	}{
		{"nil", nil, Details{}},
		{
			"provider error wrapped three deep",
			wrapThreeDeep(apiErr),
			Details{
				Message:   "a: b: c: 401 Unauthorized: Incorrect API key provided",
				Status:    401,
				Code:      "invalid_api_key",
				RequestID: "req_123",
				Stderr:    `{"error":{"code":"invalid_api_key"}}`,
				Chain: []string{
					"a: b: c: 401 Unauthorized: Incorrect API key provided",
					"b: c: 401 Unauthorized: Incorrect API key provided",
					"c: 401 Unauthorized: Incorrect API key provided",
					"401 Unauthorized: Incorrect API key provided",
				},
			},
		},
		{
			"a mark adds no layer",
			fmt.Errorf("item 7: %w", WithClass(killed, Retryable, "oom")),
			Details{
				Message:  "item 7: signal: killed",
				ExitCode: -1,
				Signal:   "killed",
				Stderr:   "partial output\n",
				Chain:    []string{"item 7: signal: killed", "signal: killed"},
			},
		},
		{
			"joined errors, depth first",
			errors.Join(fmt.Errorf("x: %w", errors.New("y")), errors.New("z")),
			Details{
				Message: "x: y\nz",
				Chain:   []string{"x: y\nz", "x: y", "y", "z"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Describe(tt.err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Describe:\n got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}
