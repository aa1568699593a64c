package heal_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/tenaxhq/tenax/heal"
)

// A generate → check → re-ask loop. The check wants three translations;
// the fake model adds the one translation the feedback asks for, so it
// fixes one error per round.
func Example() {
	required := []string{"es", "fr", "de"}
	check := func(out string) []heal.Observed {
		var errs []heal.Observed
		for _, lang := range required {
			if !strings.Contains(out, lang) {
				errs = append(errs, heal.Observed{Name: "schema", Message: "missing translation " + lang})
			}
		}
		return errs
	}
	model := func(prev, feedback string) string {
		if feedback == "" {
			return "es"
		}
		_, rest, _ := strings.Cut(feedback, "missing translation ")
		return prev + "," + rest[:2]
	}
	hints := []heal.Hint{{Match: regexp.MustCompile(`missing translation`), Text: "Give every language, comma-separated."}}

	tracker := heal.NewTracker(heal.Budget{MaxAttempts: 8, MaxErrorAttempts: 5})
	out := model("", "")
	for {
		errs := check(out)
		tracker.Observe(errs)
		if len(errs) == 0 {
			fmt.Println("valid:", out)
			break
		}
		e, ok := tracker.Next()
		if !ok {
			fmt.Println("failed:", tracker.Err())
			break
		}
		if err := tracker.Spend(e.Fingerprint, out); err != nil {
			fmt.Println("failed:", err)
			break
		}
		feedback := heal.FormatFeedback(heal.FeedbackInput{PreviousOutput: out, Err: errors.New(e.Message), Hints: hints})
		if tracker.Attempts() == 1 {
			fmt.Print(feedback, "\n")
		}
		fmt.Printf("re-ask %d: %s\n", tracker.Attempts(), e.Message)
		out = model(out, feedback)
	}
	for _, e := range tracker.Errors() {
		fmt.Printf("%s %-6s attempts=%d %s\n", e.Fingerprint, e.Status, e.Attempts, e.Message)
	}
	// Output:
	// Your previous output:
	// ```
	// es
	// ```
	//
	// The output failed validation: missing translation fr
	//
	// Hints:
	// - Give every language, comma-separated.
	//
	// Correct the problem and answer again with the complete output, not only the changed part.
	//
	// re-ask 1: missing translation fr
	// re-ask 2: missing translation de
	// valid: es,fr,de
	// 04ecc8a62ba40444 fixed  attempts=1 missing translation fr
	// 3e197dcf8d3e3eea fixed  attempts=1 missing translation de
}

func ExampleNormalize() {
	fmt.Println(heal.Normalize(`./store/jsonl.go:142:17: open /tmp/job_7/results.jsonl: permission denied after 1.5s`))
	fmt.Println(heal.Normalize(`KeyError: 'name' at 2024-01-02T15:04:05Z (request 550e8400-e29b-41d4-a716-446655440000)`))
	// Output:
	// <path>:<n>:<n>: open <path>: permission denied after <duration>
	// KeyError: <quoted> at <date> (request <uuid>)
}

func ExampleExtract() {
	output := `--- FAIL: TestParse (0.00s)
    parse_test.go:42: got 3, want 4
FAIL
FAIL	example.com/calc	0.004s
`
	for _, o := range heal.Extract(output) {
		fmt.Printf("%s: %s\n", o.Name, o.Message)
	}
	// Output:
	// TestParse: parse_test.go:42: got 3, want 4
}
