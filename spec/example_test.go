package spec_test

import (
	"fmt"

	"github.com/tenaxhq/tenax/spec"
)

func Example() {
	src := []byte(`
input: units.jsonl
task:
  type: llm
  provider: openai
  api_key: ${OPENAI_API_KEY}
  model: gpt-4o-mini
  prompt: "Translate '{{.simplified}}' to Spanish."
retry:
  backoff: {base: 500ms, jitter: full}
`)
	env := func(name string) (string, bool) {
		if name == "OPENAI_API_KEY" {
			return "sk-example", true
		}
		return "", false
	}
	s, err := spec.Parse("/jobs/translate.yaml", src, "/jobs", env)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Name, s.Input.Path, s.Input.Format)
	fmt.Println(s.Task.Model, s.Task.MaxTokens, s.Task.Timeout, s.Concurrency.Max)
	fmt.Println(s.Retry.MaxAttempts, s.Retry.Backoff.Base, s.Retry.Backoff.Jitter)
	fmt.Println(s.Secrets())

	_, err = spec.Parse("bad.yaml", []byte("task:\n  type: llm\n  modle: gpt-4o\n"), "/jobs", env)
	fmt.Println(err)
	// Output:
	// translate /jobs/units.jsonl jsonl
	// gpt-4o-mini 1024 1m0s 32
	// 5 500ms full
	// [sk-example]
	// bad.yaml:3:3: unknown key "modle" in task (did you mean "model"?)
}
