package http

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"text/template"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
)

// funcs are the functions templates may call. There is deliberately no
// quoting helper: values become whole arguments, never shell text.
var funcs = template.FuncMap{
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

// parse parses one template of the config, naming it in its errors.
func parse(name, src string) (*template.Template, error) {
	t, err := template.New(name).Option("missingkey=error").Funcs(funcs).Parse(src)
	if err != nil {
		return nil, fmt.Errorf("http: %s template: %w", name, err)
	}
	return t, nil
}

// data returns what templates render from: the item's fields, and the
// reserved names idx, id, feedback and previous_output, which win over
// fields of the same name.
func data(item task.Item) map[string]any {
	d := make(map[string]any, len(item.Fields)+4)
	for k, v := range item.Fields {
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

// render executes t over d. Its errors are the item's fault: a field is
// missing or has the wrong shape, so they are marked classify.Item.
func render(t *template.Template, d map[string]any, sb *strings.Builder) (string, error) {
	sb.Reset()
	if err := t.Execute(sb, d); err != nil {
		return "", classify.WithClass(fmt.Errorf("http: render %s: %w", t.Name(), err), classify.Item, "template")
	}
	return sb.String(), nil
}
