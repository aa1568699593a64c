package spec

import (
	"strings"
	"testing"
	"time"
)

func TestBatchModeIsCheckedAgainstTheTaskAndItsSection(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // "" for a spec that loads
	}{
		{"openai in batch mode", "task:\n  type: llm\n  provider: openai\n  model: m\n  prompt: hi\n  mode: batch\n", ""},
		{"anthropic in batch mode", "task:\n  type: llm\n  provider: anthropic\n  model: m\n  prompt: hi\n  mode: batch\n", ""},
		{"mock in batch mode", llmTask + "  mode: batch\n", ""},
		{"online mode said aloud", llmTask + "  mode: online\n", ""},
		{"unknown mode suggests", llmTask + "  mode: bach\n", `job.yaml:5:9: task.mode: unknown value "bach" (want online or batch) (did you mean "batch"?)`},
		{"exec task", "task:\n  type: exec\n  argv: [echo]\n  mode: batch\n", `job.yaml:4:9: task.mode: does not apply to exec tasks (it is for llm tasks)`},
		{"negative tail", llmTask + "  mode: batch\nbatch:\n  online_tail: -1\n", `job.yaml:7:16: batch.online_tail: must not be negative, got -1`},
		{"poll max below interval", llmTask + "batch:\n  poll_interval: 10s\n  poll_max: 5s\n", `job.yaml:7:13: batch.poll_max: 5s is less than batch.poll_interval (10s)`},
		{"trip share above 1", llmTask + "batch:\n  trip_share: 2\n", `job.yaml:6:15: batch.trip_share: must be more than 0 and at most 1, got 2`},
		{"unknown batch key", llmTask + "batch:\n  online_tial: 3\n", `job.yaml:6:3: unknown key "online_tial" in batch (did you mean "online_tail"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("job.yaml", []byte(tt.src), "/specs", nil)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("the spec should load, got:\n%v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got error:\n%v\nwant it to contain:\n%s", err, tt.want)
			}
		})
	}
}

func TestBatchDefaultsApplyOnlyInBatchMode(t *testing.T) {
	online := parse(t, llmTask, nil)
	if online.Batch != (Batch{}) || online.Task.Mode != "" {
		t.Errorf("an online spec got batch settings %+v, mode %q; want none", online.Batch, online.Task.Mode)
	}
	b := parse(t, llmTask+"  mode: batch\nbatch:\n  poll_interval: 2m\n", nil)
	want := Batch{OnlineTail: 20, PollInterval: 2 * time.Minute, PollMax: 2 * time.Minute, TripShare: 0.5}
	if b.Batch != want {
		t.Errorf("batch settings %+v, want %+v", b.Batch, want)
	}
}

func TestBatchProblemNamesTheProvidersThatHaveABatchAPI(t *testing.T) {
	task := Task{Type: "llm", Provider: "ollama"}
	if p := task.BatchProblem(); !strings.Contains(p, "openai, azure, anthropic, gemini or mock") || !strings.Contains(p, `"ollama"`) {
		t.Errorf("BatchProblem = %q; want it to list the providers and name this one", p)
	}
}

// TestBatchModeRefusesARouteWithoutABatchAPI: a batch mode spec whose
// routes include a bedrock or vertex one (the providers without a batch API)
// is refused at validate, at the route's provider, with the route's name
// and docs/batch.md; the routes' problem is also what `tenax run --batch`
// reads (Spec.BatchProblem).
func TestBatchModeRefusesARouteWithoutABatchAPI(t *testing.T) {
	const head = "task:\n  type: llm\n  prompt: hi\n  mode: batch\nroutes:\n  - {name: openai, provider: openai, model: gpt-4o-mini, api_key: k}\n"
	tests := []struct {
		name, route, want string
	}{
		{"bedrock", "  - {name: claude-aws, provider: bedrock, region: us-east-1, model: anthropic.claude-3-5-haiku-20241022-v1:0}\n",
			`job.yaml:7:34: routes[1].provider (route claude-aws): batch mode is not offered on bedrock: Bedrock's batch inference reads its requests from S3`},
		{"vertex", "  - {name: gem-gcp, provider: vertex, region: us-central1, model: gemini-2.5-flash}\n",
			`routes[1].provider (route gem-gcp): batch mode is not offered on vertex: Vertex AI's batch prediction reads Cloud Storage or BigQuery`},
		{"gemini", "  - {name: gem, provider: gemini, model: gemini-2.5-flash, api_key: k}\n", ""},
		{"claude on vertex", "  - {name: claude-gcp, provider: anthropic, region: us-east5, model: claude-sonnet-4-5@20250929}\n",
			`routes[1].provider (route claude-gcp): batch mode is not offered for Claude on Vertex AI (provider anthropic with task.project): Vertex AI's batch prediction reads Cloud Storage or BigQuery`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := head + tt.route
			if tt.name == "claude on vertex" {
				src = strings.Replace(src, "  prompt: hi\n", "  prompt: hi\n  project: my-project\n", 1)
			}
			_, err := Parse("job.yaml", []byte(src), "/specs", nil)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("the spec should load, got:\n%v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "docs/batch.md#routes") {
				t.Fatalf("got error:\n%v\nwant it to contain:\n%s\nand docs/batch.md#routes", err, tt.want)
			}
			// The same spec online loads, and --batch on it is refused.
			s, err := Parse("job.yaml", []byte(strings.Replace(src, "  mode: batch\n", "", 1)), "/specs", nil)
			if err != nil {
				t.Fatalf("online, the spec should load, got:\n%v", err)
			}
			if p := s.BatchProblem(); !strings.Contains(p, "routes[1]") || !strings.Contains(p, "docs/batch.md#routes") {
				t.Errorf("BatchProblem = %q; want the route and docs/batch.md#routes", p)
			}
		})
	}
}
