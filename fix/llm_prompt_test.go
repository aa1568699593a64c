package fix

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/task"
)

// scriptedModel answers from a list and keeps what it was asked.
type scriptedModel struct {
	answers []string
	asked   []task.Item
}

func (m *scriptedModel) Run(_ context.Context, item task.Item) (task.Result, error) {
	m.asked = append(m.asked, item)
	out, _ := json.Marshal(m.answers[min(len(m.asked), len(m.answers))-1])
	return task.Result{Output: out, Usage: task.Usage{InputTokens: 10, OutputTokens: 5}}, nil
}

func TestLLMFixerTellsTheModelWhatItNeeds(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"calc.go":      "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
		"calc_test.go": "package calc\n\n// line 3\n// line 4\n// line 5\n// line 6\nfunc TestAdd(t *testing.T) { t.Error(\"Add(2, 3) = -1, want 5\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := &scriptedModel{answers: []string{
		"<<<<<<< SEARCH calc.go\nreturn a - b\n=======\nreturn a + b\n>>>>>>> REPLACE\n",
		"<<<<<<< SEARCH calc.go\nfunc Add(a, b int) int { return a - b }\n=======\nfunc Add(a, b int) int { return a + b }\n>>>>>>> REPLACE\n",
	}}
	f := LLMFixer{Model: m, System: "Keep the style.", Prompt: "This is a calculator.", MaxInvalid: 2}
	msg := "calc_test.go:7: Add(2, 3) = -1, want 5"
	l, _ := locate(context.Background(), newFence(dir, nil), msg, "")
	req := Request{
		Attempt: 2, ErrorAttempt: 2, Workdir: dir, Check: []string{"go", "test"}, Context: "Integers only.",
		Error:    Error{TrackedError: heal.TrackedError{Name: "TestAdd", Message: msg, Status: heal.StatusActive}, Location: &l},
		Group:    []string{"TestSum"},
		Hints:    []string{"Look at the operator."},
		Previous: []AttemptSummary{{Attempt: 1, Result: heal.ResultStillFailing, Files: []string{"calc_test.go"}, Summary: "edited calc_test.go"}},
	}
	ans, err := f.Fix(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "calc.go"))
	if !strings.Contains(string(b), "return a + b") {
		t.Fatalf("calc.go after the fix:\n%s", b)
	}
	if ans.Reasks != 1 || ans.Usage.InputTokens != 20 {
		t.Errorf("%d re-asks, %d input tokens; want 1 (the first answer's SEARCH quotes part of a line) and both calls' tokens", ans.Reasks, ans.Usage.InputTokens)
	}
	first := m.asked[0].Fields
	prompt, system := first["prompt"].(string), first["system"].(string)
	for _, want := range []string{
		"This is a calculator.", "Integers only.", "go test", msg, "TestAdd", "TestSum", "Location: calc_test.go:7",
		"File calc_test.go:", "File calc.go:", "func Add(a, b int) int { return a - b }", "Look at the operator.",
		"attempt 1: still failing; changed calc_test.go",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, prompt)
		}
	}
	if !strings.Contains(system, "<<<<<<< SEARCH") || !strings.HasSuffix(system, "Keep the style.") {
		t.Errorf("the system prompt does not teach the edit format and end with the spec's system:\n%s", system)
	}
	fb := m.asked[1].Feedback
	if fb == nil || !strings.Contains(fb.Message, "does not occur") || fb.PreviousOutput != m.answers[0] {
		t.Errorf("the re-ask's feedback %+v; want the failed answer and why it did not apply", fb)
	}
}
