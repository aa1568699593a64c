package job_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/mock"
)

// truncSpec asks mock-echo to repeat a 40-character prompt (10 tokens) with
// max_tokens 6: the first answer is cut off (finish_reason length).
const truncSpec = `
input: items.jsonl
task:
  type: llm
  provider: %s
  base_url: %s
  api_key: ${OPENAI_API_KEY}
  model: mock-echo
  prompt: "Repeat this sentence: {{.word}} and more"
  max_tokens: 6
  max_tokens_ceiling: 64
  timeout: 5s
heal:
  max_attempts: %d
`

// TestCutOffAnswersAreReaskedWithRoomOrFailed: a truncated answer is never
// recorded as a success. With the heal loop on, the re-ask raises
// max_tokens and the item succeeds; with it off, the item fails as the
// item's, and the record says why (finish_reason length or max_tokens).
func TestCutOffAnswersAreReaskedWithRoomOrFailed(t *testing.T) {
	for _, provider := range []string{"openai", "anthropic"} {
		for _, heal := range []int{8, 0} {
			t.Run(fmt.Sprintf("%s/heal=%d", provider, heal), func(t *testing.T) {
				srv, url := serveMock(t, mock.Config{Record: true})
				if provider == "openai" {
					url += "/v1"
				}
				w := newLLMWorld(t)
				w.words("items.jsonl", 3)
				w.file("job.yaml", fmt.Sprintf(truncSpec, provider, url, heal), 0o644)
				res := w.run("job.yaml")
				cut := map[string]string{"openai": "length", "anthropic": "max_tokens"}[provider]
				for idx, rec := range w.records(res.JobID) {
					if heal == 0 {
						if rec.Class != classify.Item || rec.FinishReason != cut || !strings.Contains(rec.Error, "cut off at max_tokens 6") {
							t.Errorf("#%d: %v %q finish %q; want an item failure saying the answer was cut off, finish_reason %s", idx, rec.Class, rec.Error, rec.FinishReason, cut)
						}
						continue
					}
					want := fmt.Sprintf(`"Repeat this sentence: w%d and more"`, idx)
					if rec.Failed() || string(rec.Output) != want || rec.HealAttempts != 1 || rec.FinishReason == cut || rec.FinishReason == "" {
						t.Errorf("#%d: output %s, error %q, %d re-asks, finish %q; want %s after one re-ask", idx, rec.Output, rec.Error, rec.HealAttempts, rec.FinishReason, want)
					}
				}
				if heal > 0 {
					var raised bool
					for _, r := range srv.Requests() {
						raised = raised || len(r.Messages) > 1
					}
					if !raised || srv.Stats().Requests != 6 {
						t.Errorf("the mock saw %d requests, want 3 cut off and 3 re-asks", srv.Stats().Requests)
					}
				}
			})
		}
	}
}

func TestNotesSayHowJSONIsAskedForAndWhy(t *testing.T) {
	w := newLLMWorld(t)
	for _, tt := range []struct{ task, schema, want string }{
		{"provider: openai\n  model: gpt-4o", "{type: object, properties: {es: {type: string}}, required: [es], additionalProperties: false}",
			"structured output: json_schema (validate.json_schema fits OpenAI's strict subset"},
		{"provider: openai\n  model: gpt-4o", "{type: object, properties: {es: {type: string}}, required: [es]}",
			`structured output: json_object (schema # is an object without "additionalProperties": false`},
		{"provider: anthropic\n  model: claude-3-5-haiku-latest", "{type: object, properties: {es: {type: string}}, required: [es]}",
			"structured output: tool (claude-3-5-haiku-latest predates output_config"},
	} {
		w.file("n.yaml", "task:\n  type: llm\n  prompt: hi\n  api_key: k\n  "+tt.task+"\nvalidate:\n  json_schema: "+tt.schema+"\n", 0o644)
		s, err := job.LoadSpec(w.dir+"/n.yaml", nil)
		if err != nil {
			t.Fatal(err)
		}
		notes, err := job.Notes(s)
		if err != nil || len(notes) == 0 || !strings.HasPrefix(notes[0], tt.want) {
			t.Errorf("Notes = %q, %v; want the first to start %q", notes, err, tt.want)
		}
	}
}
