package spec

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestPlaceholderNamesAreSingleBracedIdentifiers: only {identifier} is a
// placeholder; JSON, actions and shell variables are not.
func TestPlaceholderNamesAreSingleBracedIdentifiers(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"Translate '{text}' to Spanish.", []string{"text"}},
		{"{a} and {b_2} and {a}", []string{"a", "b_2", "a"}},
		{`Answer as {"es": "..."}`, nil},
		{"{{.text}} {{ if .x }}{y}{{ end }}", []string{"y"}},
		{"{{.text}}", nil},
		{"{{{.text}}}", nil},
		{"echo ${HOME} $${TENAX_IDX}", nil},
		{"{0} {1x} { text } {text", nil},
		{"{text}}", nil},
		{"awk '{print}'", []string{"print"}},
		{"{{ unclosed {x}", nil},
	}
	for _, tt := range tests {
		if got := placeholderNames(tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("placeholderNames(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

// TestBraceTemplatesAreFoundAtTheirPlace: the translator's
// `Translate '{text}' to Spanish.` passed validate and went out literally;
// the spec now reports every {name} of the task's templates at the line
// and column of its brace, however the scalar is written.
func TestBraceTemplatesAreFoundAtTheirPlace(t *testing.T) {
	const llm = "task:\n  type: llm\n  provider: mock\n"
	tests := []struct {
		name, src string
		want      []string // template name line:col
	}{
		{"plain", llm + "  prompt: Translate '{text}' to Spanish.\n",
			[]string{"task.prompt text 4:22"}},
		{"double-quoted", llm + "  prompt: \"Translate {text}, then {text} again\"\n",
			[]string{"task.prompt text 4:22", "task.prompt text 4:35"}},
		{"a block literal", llm + "  system: be brief\n  prompt: |\n    Translate this:\n      {text}\n    Reply as {\"es\": \"...\"} only, for {lang}.\n",
			[]string{"task.prompt text 7:7", "task.prompt lang 8:38"}},
		{"a flow mapping", "task: {type: llm, provider: mock, system: \"you {role}\", prompt: \"do {role}\"}\n",
			[]string{"task.system role 1:48", "task.prompt role 1:69"}},
		{"after a multi-byte character", llm + "  prompt: «{text}»\n",
			[]string{"task.prompt text 4:12"}},
		{"exec argv and env", "task:\n  type: exec\n  argv: [python3, t.py, \"{text}\"]\n  env: {LANG_TO: \"{lang}\"}\n",
			[]string{"task.argv[2] text 3:26", "task.env.LANG_TO lang 4:19"}},
		{"http url and body", "task:\n  type: http\n  url: http://x/{id}\n  body: '{\"q\": \"{q}\"}'\n",
			[]string{"task.url id 3:17", "task.body q 4:17"}},
		{"a real template is none", llm + "  prompt: Translate '{{.text}}' to Spanish.\n", nil},
		{"JSON is none", llm + "  prompt: 'Reply {\"es\": \"...\"}'\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("job.yaml", []byte(tt.src), "/specs", nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range s.Placeholders() {
				if p.File != "job.yaml" {
					t.Errorf("placeholder %+v: file %q", p, p.File)
				}
				got = append(got, fmt.Sprintf("%s %s %d:%d", p.Template, p.Name, p.Line, p.Col))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Placeholders:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestPlaceholderProblemIsAnErrorOnlyForAField: a {name} naming a field is
// reported as a mistake; another one is a warning.
func TestPlaceholderProblemIsAnErrorOnlyForAField(t *testing.T) {
	p := Placeholder{Template: "task.prompt", Name: "text", File: "job.yaml", Line: 4, Col: 22}
	if got, want := p.Problem(true).Error(), `job.yaml:4:22: task.prompt: {text} is sent as written, braces and all, though the items have a field "text" (did you mean "{{.text}}"?)`; got != want {
		t.Errorf("as a field:\n got %s\nwant %s", got, want)
	}
	if got := p.Problem(false).Error(); !strings.HasPrefix(got, "job.yaml:4:22: warning: task.prompt: {text} is sent as written") || !strings.HasSuffix(got, `(did you mean "{{.text}}"?)`) {
		t.Errorf("as a warning: %s", got)
	}
}
