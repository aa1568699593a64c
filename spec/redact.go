package spec

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
)

// redactedText replaces every secret in the redacted spec.
const redactedText = "[redacted]"

// Secrets returns the values that must never be shown: every value that
// came from ${VAR} expansion into task.api_key, task.azure_ad_token,
// task.headers, task.env, task.url, task.body or task.extra_body, whatever
// the variable's name; the query values and userinfo of a task.base_url
// that ${VAR} went into; those of any variable whose name contains KEY,
// TOKEN, SECRET or PASSWORD (case-insensitive), wherever they went; and
// task.api_key and task.azure_ad_token however they were written. Logs,
// errors and records should scrub them too.
func (s *Spec) Secrets() []string { return slices.Clone(s.secrets) }

// Redact returns text with every secret of the spec replaced by
// "[redacted]".
func (s *Spec) Redact(text string) string {
	for _, secret := range s.secrets {
		text = strings.ReplaceAll(text, secret, redactedText)
	}
	return text
}

// Redacted returns the resolved spec as JSON, keys in the spec's order,
// with every secret replaced by "[redacted]" wherever it appears inside a
// string. Zero values (unset options) are left out; durations are written
// as Go durations ("1m30s"). This is what manifest.json keeps.
func (s *Spec) Redacted() ([]byte, error) {
	return json.Marshal(s.tree())
}

// RedactedYAML is Redacted as YAML, for `tenax validate`.
func (s *Spec) RedactedYAML() ([]byte, error) {
	return yaml.MarshalWithOptions(toYAML(s.tree()), yaml.UseLiteralStyleIfMultiline(true), yaml.IndentSequence(true))
}

// tree is the redacted spec as ordered plain values.
func (s *Spec) tree() any {
	v, _ := s.value(reflect.ValueOf(*s))
	return v
}

// value converts v to plain values (object, []any, string, numbers,
// bools), redacting strings; ok is false for a zero value to leave out.
func (s *Spec) value(v reflect.Value) (any, bool) {
	switch x := v.Interface().(type) {
	case time.Duration:
		return formatDuration(x), x != 0
	case Schema:
		switch {
		case x.Path != "":
			return s.Redact(x.Path), true
		case x.inline != nil:
			return s.redactValue(x.inline), true
		}
		return nil, false
	case Object:
		if x.inline == nil {
			return nil, false
		}
		return s.redactValue(x.inline), true
	}
	switch v.Kind() {
	case reflect.String:
		return s.Redact(v.String()), v.Len() > 0
	case reflect.Bool:
		return v.Bool(), v.Bool()
	case reflect.Int, reflect.Int64:
		return v.Int(), v.Int() != 0
	case reflect.Float64:
		return v.Float(), v.Float() != 0
	case reflect.Pointer:
		if v.IsNil() {
			return nil, false
		}
		inner, _ := s.value(v.Elem())
		return inner, true
	case reflect.Slice:
		if v.Len() == 0 {
			return nil, false
		}
		list := make([]any, v.Len())
		for i := range list {
			list[i], _ = s.value(v.Index(i))
		}
		return list, true
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		obj := object{}
		for _, k := range keys {
			val, _ := s.value(v.MapIndex(k))
			obj = append(obj, member{s.Redact(k.String()), val})
		}
		return obj, len(obj) > 0
	case reflect.Struct:
		obj := object{}
		names, index := fieldsOf(v.Type())
		for _, name := range names {
			if val, ok := s.value(v.Field(index[name])); ok {
				obj = append(obj, member{name, val})
			}
		}
		return obj, len(obj) > 0
	}
	return nil, false
}

// redactValue redacts the strings of an inline schema.
func (s *Spec) redactValue(v any) any {
	switch x := v.(type) {
	case string:
		return s.Redact(x)
	case object:
		out := make(object, len(x))
		for i, m := range x {
			out[i] = member{s.Redact(m.key), s.redactValue(m.value)}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = s.redactValue(e)
		}
		return out
	}
	return v
}

// formatDuration writes d as Go does, without the zero units Go adds
// ("1m" rather than "1m0s").
func formatDuration(d time.Duration) string {
	out := d.String()
	if strings.HasSuffix(out, "m0s") {
		out = strings.TrimSuffix(out, "0s")
	}
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return out
}
