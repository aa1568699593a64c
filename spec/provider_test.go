package spec

import (
	"strings"
	"testing"
)

func TestLLMProviderKeysAreCheckedWhereWritten(t *testing.T) {
	tests := []struct {
		name, task string
		want       string // "" when the spec is fine
	}{
		{"top_p out of range", "provider: openai\n  model: m\n  top_p: 1.5", "task.top_p: must be between 0 and 1, got 1.5"},
		{"empty stop", "provider: openai\n  model: m\n  stop: [\"\"]", "task.stop[0]: a stop sequence cannot be empty"},
		{"five stops for openai", "provider: openai\n  model: m\n  stop: [a, b, c, d, e]", "OpenAI takes at most 4 stop sequences"},
		{"seed for anthropic", "provider: anthropic\n  model: m\n  seed: 3", "task.seed: anthropic has no seed"},
		{"unknown effort", "provider: openai\n  model: o3\n  reasoning_effort: extreme", `task.reasoning_effort: unknown value "extreme"`},
		{"thinking on openai", "provider: openai\n  model: m\n  thinking_budget: 2000", "extended thinking is anthropic's"},
		{"thinking below the minimum", "provider: anthropic\n  model: m\n  thinking_budget: 500", "must be at least 1024"},
		{"thinking above max_tokens", "provider: anthropic\n  model: m\n  max_tokens: 2000\n  thinking_budget: 2000", "must be less than task.max_tokens (2000)"},
		{"cache_prompt on openai", "provider: openai\n  model: m\n  cache_prompt: true", "task.cache_prompt: is anthropic's"},
		{"azure without endpoint", "provider: azure\n  model: d", "task.base_url: missing for azure"},
		{"api_version off azure", "provider: openai\n  model: m\n  api_version: 2024-10-21", "task.api_version: is for provider azure only"},
		{"ceiling below max_tokens", "provider: openai\n  model: m\n  max_tokens: 100\n  max_tokens_ceiling: 50", "task.max_tokens_ceiling: must be at least task.max_tokens (100)"},
		{"extra_body not a mapping", "provider: openai\n  model: m\n  extra_body: [1]", "task.extra_body: expected a mapping, got a list"},
		{"a good azure task", "provider: azure\n  base_url: https://r.openai.azure.com\n  model: d\n  api_version: 2024-10-21\n  headers: {X-Team: a}\n  extra_body: {options: {num_ctx: 8192}}", ""},
		{"region off bedrock", "provider: openai\n  model: m\n  region: us-east-1", "task.region: is for providers bedrock and vertex, and anthropic with task.project (Claude on Vertex AI) only"},
		{"project off vertex", "provider: gemini\n  model: m\n  project: p", "task.project: is for provider vertex, and anthropic on Vertex AI, only"},
		{"api_key on vertex", "provider: vertex\n  model: m\n  api_key: k", "task.api_key: vertex authenticates with Google credentials"},
		{"a good gemini task", "provider: gemini\n  model: gemini-2.5-flash\n  api_key: k", ""},
		{"a good vertex task", "provider: vertex\n  project: my-project\n  region: us-central1\n  model: gemini-2.5-flash", ""},
		{"api_key on bedrock", "provider: bedrock\n  model: m\n  api_key: k", "task.api_key: bedrock signs its calls with AWS credentials"},
		{"a good bedrock task", "provider: bedrock\n  region: eu-west-1\n  base_url: https://vpce-1.bedrock-runtime.eu-west-1.vpce.amazonaws.com\n  model: anthropic.claude-3-5-haiku-20241022-v1:0", ""},
		{"region on anthropic without a project", "provider: anthropic\n  model: m\n  region: us-east5", "task.region: is for providers bedrock and vertex, and anthropic with task.project"},
		{"claude on vertex without a location", "provider: anthropic\n  project: my-project\n  model: claude-sonnet-4-5@20250929", "task.region: missing: Claude on Vertex AI needs a location"},
		{"claude on vertex with an api_key", "provider: anthropic\n  project: my-project\n  region: us-east5\n  api_key: k\n  model: claude-sonnet-4-5@20250929", "task.api_key: Claude on Vertex AI (provider anthropic with task.project) authenticates with Google credentials"},
		{"claude on vertex in an AWS region", "provider: anthropic\n  project: my-project\n  region: us-east-1\n  model: claude-sonnet-4-5@20250929", `task.region: "us-east-1" is not a Vertex AI location`},
		{"a good claude on vertex task", "provider: anthropic\n  project: my-project\n  region: global\n  model: claude-sonnet-4-5@20250929\n  base_url: http://127.0.0.1:8080", ""},
		{"a good reasoning task", "provider: anthropic\n  model: claude-sonnet-4-5\n  thinking_budget: 4096\n  cache_prompt: true\n  top_p: 0.95", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "task:\n  type: llm\n  prompt: hi\n  " + tt.task + "\n"
			_, err := Parse("job.yaml", []byte(src), "/specs", envOf(nil))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Parse:\n%v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Parse = %v, want an error containing %q", err, tt.want)
			case tt.want != "" && !strings.HasPrefix(err.Error(), "job.yaml:"):
				t.Errorf("the error %q has no position", err)
			}
		})
	}
}

func TestMaxTokensDefaultLeavesRoomForReasoning(t *testing.T) {
	tests := []struct {
		task string
		want int
	}{
		{"provider: openai\n  model: gpt-4o-mini", 1024},
		{"provider: openai\n  model: o4-mini", 16384},
		{"provider: azure\n  base_url: https://r.openai.azure.com\n  model: gpt-5-mini", 16384},
		{"provider: anthropic\n  model: claude-sonnet-4-5\n  thinking_budget: 4096", 4096 + 1024},
		{"provider: openai\n  model: o3\n  max_tokens: 500", 500},
	}
	for _, tt := range tests {
		s := parse(t, "task:\n  type: llm\n  prompt: hi\n  "+tt.task+"\n", nil)
		if s.Task.MaxTokens != tt.want {
			t.Errorf("%q: max_tokens defaulted to %d, want %d", tt.task, s.Task.MaxTokens, tt.want)
		}
	}
}

func TestEnvironmentValuesSentWithARequestAreSecretsWhateverTheirName(t *testing.T) {
	env := map[string]string{"GATEWAY_CRED": "gw-cred-9876", "AZ": "entra-abcdef", "OPTS": "opt-secret-1"}
	s := parse(t, `task:
  type: llm
  provider: azure
  base_url: https://r.openai.azure.com
  model: d
  prompt: hi
  azure_ad_token: ${AZ}
  headers: {X-Gateway: "${GATEWAY_CRED}"}
  extra_body: {options: {token: "${OPTS}"}}
`, env)
	secrets := strings.Join(s.Secrets(), "\n")
	for _, want := range env {
		if !strings.Contains(secrets, want) {
			t.Errorf("Secrets() = %q lacks %q", s.Secrets(), want)
		}
	}
	out, err := s.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range env {
		if strings.Contains(string(out), v) {
			t.Errorf("the redacted spec shows %q:\n%s", v, out)
		}
	}
	if !strings.Contains(string(out), `"extra_body":{"options":{"token":"[redacted]"}}`) {
		t.Errorf("the redacted spec lost extra_body's shape:\n%s", out)
	}
}

func TestOptionValuesKeyIsExecOnly(t *testing.T) {
	if _, err := Parse("job.yaml", []byte("task:\n  type: exec\n  argv: [sort, \"{{.f}}\"]\n  allow_option_values: true\n"), "/specs", envOf(nil)); err != nil {
		t.Errorf("Parse: %v", err)
	}
	_, err := Parse("job.yaml", []byte("task:\n  type: http\n  url: http://x\n  allow_option_values: true\n"), "/specs", envOf(nil))
	if err == nil || !strings.Contains(err.Error(), "task.allow_option_values: does not apply to http tasks") {
		t.Errorf("Parse = %v, want allow_option_values refused for http", err)
	}
}

func TestAVariableInTheBaseURLsQueryIsASecret(t *testing.T) {
	// base_url: …/v1?gwtoken=${GW_Q} was printed by tenax validate and
	// stored in manifest.json: GW_Q's name says nothing, and base_url was
	// not a place whose values are secret.
	env := map[string]string{"GW_Q": "gwq-7f3a9c", "GW_HOST": "gw.example.com", "GW_USER": "svc-user", "GW_PASS": "pw-b1c2d3"}
	s := parse(t, `task:
  type: llm
  provider: openai
  base_url: https://${GW_USER}:${GW_PASS}@${GW_HOST}/v1?gwtoken=${GW_Q}&region=eu-west
  api_key: sk-abcdef
  model: m
  prompt: hi
`, env)
	for _, render := range []func() ([]byte, error){s.Redacted, s.RedactedYAML} {
		out, err := render()
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{"gwq-7f3a9c", "svc-user", "pw-b1c2d3"} {
			if strings.Contains(string(out), secret) {
				t.Errorf("the redacted spec shows %q:\n%s", secret, out)
			}
		}
		if !strings.Contains(string(out), "gw.example.com/v1?gwtoken=[redacted]") || !strings.Contains(string(out), "region=eu-west") {
			t.Errorf("the redacted spec should keep the host, the path and the literal query:\n%s", out)
		}
	}
	if got := s.Redact("POST https://gw.example.com/v1/chat/completions?gwtoken=gwq-7f3a9c: 500"); strings.Contains(got, "gwq-7f3a9c") {
		t.Errorf("Redact left the query's token: %q", got)
	}
}
