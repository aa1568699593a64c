package task_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
)

func TestTemplateRenders(t *testing.T) {
	item := task.Item{Idx: 4, ID: "u4", Fields: map[string]any{"word": " Harbor ", "tags": []any{"a", "b"}, "empty": ""}}
	healed := item
	healed.Feedback = &task.Feedback{PreviousOutput: "{bad", Message: "not JSON"}
	cases := []struct {
		name, src string
		item      task.Item
		want      string
	}{
		{"field", "{{.word}}", item, " Harbor "},
		{"functions", "{{.word | trim | lower}}/{{upper .id}}", item, "harbor/U4"},
		{"json", "{{json .tags}}", item, `["a","b"]`},
		{"default fills an empty field", `{{.empty | default "none"}}`, item, "none"},
		{"a JSON null renders as nothing", `[{{.gone}}]`, task.Item{Fields: map[string]any{"gone": nil}}, "[]"},
		{"reserved names", "{{.idx}} {{.id}} [{{.feedback}}]", item, "4 u4 []"},
		{"feedback on a re-ask", "{{.previous_output}} -> {{.feedback}}", healed, "{bad -> not JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl, err := task.ParseTemplate("test", c.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.Render(c.item)
			if err != nil || got != c.want {
				t.Errorf("Render = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestTemplateMissingFieldIsTheItemsFault(t *testing.T) {
	tmpl, err := task.ParseTemplate("argv[1]", "{{.path}}")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render(task.Item{Fields: map[string]any{"name": "x"}})
	var marked *classify.Error
	if !errors.As(err, &marked) || marked.Class != classify.Item || !strings.Contains(err.Error(), "render argv[1]") {
		t.Fatalf("error %v: want a classify.Item mark naming the template", err)
	}
}

func TestTemplateParseErrorNamesTheTemplate(t *testing.T) {
	if _, err := task.ParseTemplate("prompt", "{{.x"); err == nil || !strings.HasPrefix(err.Error(), "prompt template: ") {
		t.Fatalf("error %v: want it to start with the template's name", err)
	}
}
