package task

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	// text/template without method calls: the standard package looks
	// methods up by name at run time, which makes Go's linker keep every
	// exported method of every type in the binary (30 MB of the SDKs'
	// generated code); templates here render items, which have no methods
	// (docs/install.md, "Sizes").
	template "github.com/DataDog/datadog-agent/pkg/template/text"

	"github.com/tenaxhq/tenax/classify"
)

// Template is a text/template rendered over an item: an exec task's argv,
// an HTTP task's URL, headers and body, an LLM task's prompts. A field the
// template names but the item lacks is an error (missingkey=error), and so
// is a template that cannot render: both are the item's fault, marked
// classify.Item.
//
// Templates see the item's fields and the reserved names idx, id,
// feedback and previous_output (empty until the heal loop re-asks), which
// win over fields of the same name, and the functions json, lower, upper,
// trim and default. There is deliberately no quoting helper: an exec
// argument is a whole argument, never shell text.
type Template struct {
	t *template.Template
}

// templateFuncs are the functions templates may call.
var templateFuncs = template.FuncMap{
	"json":    toJSON,
	"lower":   func(v any) string { return strings.ToLower(text(v)) },
	"upper":   func(v any) string { return strings.ToUpper(text(v)) },
	"trim":    func(v any) string { return strings.TrimSpace(text(v)) },
	"default": orDefault,
}

func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// orDefault returns v, or def when v is nil or its type's zero value, so
// that `{{.x | default "none"}}` fills in empty fields.
func orDefault(def, v any) any {
	if v == nil {
		return def
	}
	if rv := reflect.ValueOf(v); rv.IsZero() || (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Map) && rv.Len() == 0 {
		return def
	}
	return v
}

// ParseTemplate parses src as the template called name (which errors name:
// "argv[1]", "prompt").
func ParseTemplate(name, src string) (*Template, error) {
	t, err := template.New(name).Option("missingkey=error").Funcs(templateFuncs).Parse(src)
	if err != nil {
		return nil, fmt.Errorf("%s template: %w", name, err)
	}
	return &Template{t: t}, nil
}

// Name returns the template's name.
func (t *Template) Name() string { return t.t.Name() }

// TemplateData returns what templates render from for item. Build it once
// per attempt and Execute every template of the task over it.
func TemplateData(item Item) map[string]any {
	d := make(map[string]any, len(item.Fields)+4)
	for k, v := range item.Fields {
		if v == nil {
			// A JSON null renders as nothing, not as text/template's
			// "<no value>" in a prompt or an argument.
			v = ""
		}
		d[k] = v
	}
	d["idx"] = item.Idx
	d["id"] = item.ID
	d["feedback"], d["previous_output"] = "", ""
	if fb := item.Feedback; fb != nil {
		d["feedback"], d["previous_output"] = fb.Message, fb.PreviousOutput
	}
	return d
}

// Execute renders the template over data into sb (reset first) and
// returns the text. Its errors are marked classify.Item.
func (t *Template) Execute(sb *strings.Builder, data map[string]any) (string, error) {
	sb.Reset()
	if err := t.t.Execute(sb, data); err != nil {
		return "", classify.WithClass(fmt.Errorf("render %s: %w", t.t.Name(), err), classify.Item, "template")
	}
	return sb.String(), nil
}

// Render renders the template over item.
func (t *Template) Render(item Item) (string, error) {
	var sb strings.Builder
	return t.Execute(&sb, TemplateData(item))
}
