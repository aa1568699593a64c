package spec

import (
	"strings"
	"testing"
)

// TestMaxAnswerBytesIsReadForEveryTaskTypeAndNeverNegative: the bound on a
// successful answer applies to llm, exec and http tasks alike; unset it is
// 0 (the tasks' 16 MiB), and a negative one is refused.
func TestMaxAnswerBytesIsReadForEveryTaskTypeAndNeverNegative(t *testing.T) {
	for _, task := range []string{
		"{type: llm, provider: mock, prompt: hi",
		"{type: exec, argv: [echo]",
		"{type: http, url: 'http://localhost/'",
	} {
		s, err := Parse("job.yaml", []byte("task: "+task+", max_answer_bytes: 1048576}\n"), "/specs", nil)
		if err != nil || s.Task.MaxAnswerBytes != 1<<20 {
			t.Errorf("%s}: max_answer_bytes %d, error %v; want 1048576 and no error", task, s.Task.MaxAnswerBytes, err)
		}
	}
	_, err := Parse("job.yaml", []byte("task: {type: exec, argv: [echo], max_answer_bytes: -1}\n"), "/specs", nil)
	if err == nil || !strings.Contains(err.Error(), "task.max_answer_bytes") || !strings.Contains(err.Error(), "must not be negative") {
		t.Errorf("a negative bound gave error %v; want one naming task.max_answer_bytes", err)
	}
}
