package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// importFixture imports testdata/import/name as `tenax import` would with
// the spec written beside it.
func importFixture(t *testing.T, name string, opts ImportOptions) *Imported {
	t.Helper()
	path := filepath.Join("testdata", "import", name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	im, err := Import(path, data, opts)
	if err != nil {
		t.Fatalf("Import(%s): %v", name, err)
	}
	return im
}

// TestImportSaysWhatEveryKeyBecame: the designs' own config files were
// refused outright ("unknown key llm"). Import reads them and says, at
// each key's line, what it became or why it has no equivalent.
func TestImportSaysWhatEveryKeyBecame(t *testing.T) {
	tests := []struct {
		file string
		opts ImportOptions
		// want are the lines, by their key's line in the file; every key
		// of the file must have one.
		want map[int]string
	}{
		{"translator.yaml", ImportOptions{}, map[int]string{
			3:  "llm.provider: openai → task.provider: openai",
			4:  "llm.model: gpt-4o-mini → task.model: gpt-4o-mini",
			5:  "llm.api_key: sk-proj-abc123notarealkey → task.api_key: ${OPENAI_API_KEY} (the key written in the file is not copied: a spec is shown and saved with every job, so export OPENAI_API_KEY and the spec reads it)",
			6:  "llm.temperature: 0.3 → task.temperature: 0.3",
			7:  "llm.max_tokens: 200 → task.max_tokens: 200",
			8:  "llm.timeout: 30 → task.timeout: 30s (a number of seconds)",
			10: "processing.input_file: words.jsonl → input: words.jsonl",
			11: "processing.output_file: translated.jsonl → no equivalent: tenax writes every result to the job's results.jsonl; " +
				"`tenax run SPEC --output translated.jsonl` also writes them to this file, in input order",
			12: "processing.batch_size: 10 → pacing.batch_size: 10 (dispatch this many items, wait for all of them to finish, pause pacing.batch_delay, go on)",
			13: "processing.max_concurrent: 5 → concurrency.max: 5 (the most attempts in flight at once)",
			14: "processing.batch_delay: 0.5 → pacing.batch_delay: 500ms (a number of seconds; the pause between two batches)",
			15: "processing.max_retries: 3 → retry.max_attempts: 4 (" + maxRetriesNote + ")",
			16: "processing.retry_backoff_base: 2 → retry.backoff.base: 2s (a number of seconds; the first retry's delay, which doubles (retry.backoff.multiplier) each time)",
			17: "processing.max_retry_backoff: 60 → retry.backoff.max: 1m (a number of seconds; the longest delay between two retries)",
			18: "processing.circuit_breaker_threshold: 5 → breaker.threshold: 5 (the consecutive counted failures that open the breaker)",
			19: "processing.checkpoint_interval: 50 → checkpoint.flush_every: 50 (results are made durable at least every this many records (and every checkpoint.flush_interval))",
			20: "processing.log_level: INFO → no equivalent: tenax has no key for it; nothing was carried over",
			22: "prompt.system: You are a careful Chinese-Spanish translator. → task.system: You are a careful Chinese-Spanish translator.",
			23: `prompt.template: "Translate '{text}' to Spanish. Answer with the translation only.\n"` +
				` → task.prompt: "Translate '{{.text}}' to Spanish. Answer with the translation only.\n" ({text} became {{.text}}: a tenax template names an item's field as {{.field}})`,
		}},
		{"reviewer.yaml", ImportOptions{}, map[int]string{
			4:  "agents.reviewer.provider: anthropic → task.provider: anthropic",
			5:  "agents.reviewer.model: claude-sonnet-4-5 → task.model: claude-sonnet-4-5",
			6:  "agents.reviewer.temperature: 0.2 → task.temperature: 0.2",
			7:  "agents.reviewer.max_tokens: 1500 → task.max_tokens: 1500",
			8:  "agents.reviewer.system_prompt: You are a strict code reviewer. Name each bug with its line. → task.system: You are a strict code reviewer. Name each bug with its line.",
			9:  "agents.reviewer.prompt_template: Review the file {path} and list its bugs. → task.prompt: Review the file {{.path}} and list its bugs. ({path} became {{.path}}: a tenax template names an item's field as {{.field}})",
			11: "agents.reviewer.batch_processing.enabled: true → nothing to set: tenax always runs a job over many items as one pipeline, concurrency.max in flight",
			12: "agents.reviewer.batch_processing.batch_size: 4 → pacing.batch_size: 4 (dispatch this many items, wait for all of them to finish, pause pacing.batch_delay, go on)",
			13: "agents.reviewer.batch_processing.max_concurrent: 3 → concurrency.max: 3 (the most attempts in flight at once)",
			14: "agents.reviewer.batch_processing.file_delay: 0.2 → pacing.item_delay: 200ms (a number of seconds; the pause between two items' dispatches)",
			15: "agents.reviewer.batch_processing.batch_delay: 1 → pacing.batch_delay: 1s (a number of seconds; the pause between two batches)",
			16: "agents.reviewer.batch_processing.max_retries: 2 → retry.max_attempts: 3 (" + maxRetriesNote + ")",
			17: "agents.reviewer.batch_processing.retry_backoff_base: 1 → retry.backoff.base: 1s (a number of seconds; the first retry's delay, which doubles (retry.backoff.multiplier) each time)",
			18: "agents.reviewer.batch_processing.max_retry_backoff: 30 → retry.backoff.max: 30s (a number of seconds; the longest delay between two retries)",
			19: "agents.reviewer.batch_processing.circuit_breaker_threshold: 4 → breaker.threshold: 4 (the consecutive counted failures that open the breaker)",
			20: "agents.reviewer.batch_processing.mode: parallel → nothing to set: tenax runs items concurrently, concurrency.max in flight",
			22: "agents.summarizer.model: claude-haiku-4-5 → no equivalent: another agent: a spec runs one task (this import is of agents.reviewer; import this one with --agent summarizer)",
			23: "agents.summarizer.system_prompt: Summarize the reviews. → no equivalent: another agent: a spec runs one task (this import is of agents.reviewer; import this one with --agent summarizer)",
			24: "output_dir: reviews → no equivalent: a key beside agents: tenax import reads agents.reviewer only",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			im := importFixture(t, tt.file, tt.opts)
			seen := map[int]bool{}
			for _, l := range im.Lines {
				if l.From == "" {
					continue
				}
				seen[l.Line] = true
				want, ok := tt.want[l.Line]
				if !ok {
					t.Errorf("line %d: unexpected %s", l.Line, l)
					continue
				}
				if got := l.String(); got != want {
					t.Errorf("line %d:\n got %s\nwant %s", l.Line, got, want)
				}
			}
			for line, want := range tt.want {
				if !seen[line] {
					t.Errorf("line %d has no import line; want %s", line, want)
				}
			}
		})
	}
}

// TestImportedSpecsParse: what Import writes is a spec Parse accepts, with
// the values converted, in the order of the spec's keys.
func TestImportedSpecsParse(t *testing.T) {
	set := func(string) (string, bool) { return "sk-test", true }
	for _, file := range []string{"translator.yaml", "reviewer.yaml"} {
		t.Run(file, func(t *testing.T) {
			im := importFixture(t, file, ImportOptions{})
			s, err := Parse("imported.yaml", im.YAML, "/specs", set)
			if err != nil {
				t.Fatalf("Parse of the imported spec: %v\n%s", err, im.YAML)
			}
			if s.Task.Type != "llm" || !strings.Contains(s.Task.Prompt, "{{.") || len(s.Placeholders()) != 0 {
				t.Errorf("task %+v, placeholders %v: want an llm task whose prompt names fields as {{.field}}\n%s", s.Task, s.Placeholders(), im.YAML)
			}
			if !strings.HasPrefix(string(im.YAML), "# Imported from "+file) {
				t.Errorf("the spec does not say where it came from:\n%s", im.YAML)
			}
		})
	}
	im := importFixture(t, "translator.yaml", ImportOptions{})
	s, err := Parse("imported.yaml", im.YAML, "/specs", set)
	if err != nil {
		t.Fatal(err)
	}
	if s.Retry.MaxAttempts != 4 || s.Retry.Backoff.Max.Seconds() != 60 || s.Pacing.BatchSize != 10 || s.Breaker.Threshold != 5 || s.Input.Path != "/specs/words.jsonl" {
		t.Errorf("converted values: retry %+v, pacing %+v, breaker %d, input %q", s.Retry, s.Pacing, s.Breaker.Threshold, s.Input.Path)
	}
}

// TestImportRebasesTheInputPath: a spec's paths are relative to the spec,
// so an input named beside the config is named from where the spec goes.
func TestImportRebasesTheInputPath(t *testing.T) {
	im := importFixture(t, "translator.yaml", ImportOptions{SourceDir: "/home/u/translator", SpecDir: "/home/u/jobs"})
	if !strings.Contains(string(im.YAML), "input: ../translator/words.jsonl\n") {
		t.Errorf("input not rebased:\n%s", im.YAML)
	}
}

// TestImportRefusesWhatItCannotRead: a file of no known shape, or an
// agent it does not have, is an error that says what Import reads.
func TestImportRefusesWhatItCannotRead(t *testing.T) {
	tests := []struct {
		name, src string
		opts      ImportOptions
		want      string
	}{
		{"a tenax spec", "task:\n  type: exec\n  argv: [echo]\n", ImportOptions{},
			"c.yaml:1:1: not a config tenax import reads: want top-level llm:, processing: and prompt: sections"},
		{"no such agent", "agents:\n  a:\n    model: m\n", ImportOptions{Agent: "b"}, `c.yaml:1:1: no agent "b" under agents (it has a)`},
		{"two agents, none batched", "agents:\n  a:\n    model: m\n  b:\n    model: n\n", ImportOptions{},
			"c.yaml:1:1: agents has a, b: say which to import with --agent"},
		{"not YAML", "llm: [unclosed\n", ImportOptions{}, "c.yaml:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Import("c.yaml", []byte(tt.src), tt.opts)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Import: %v\nwant %s…", err, tt.want)
			}
		})
	}
}
