package exec

import (
	"fmt"
	"strings"

	"github.com/tenaxhq/tenax/task"
)

// parse parses one template of the config, naming it in its errors.
func parse(name, src string) (*task.Template, error) {
	t, err := task.ParseTemplate(name, src)
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	return t, nil
}

// data returns what templates render from (see task.TemplateData).
func data(item task.Item) map[string]any { return task.TemplateData(item) }

// render executes t over d; its errors are marked classify.Item.
func render(t *task.Template, d map[string]any, sb *strings.Builder) (string, error) {
	s, err := t.Execute(sb, d)
	if err != nil {
		return "", fmt.Errorf("exec: %w", err)
	}
	return s, nil
}
