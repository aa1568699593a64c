package spec

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
)

// The rules of Import: which spec key each key of a section becomes. The
// names are looked up in the tables of aliases.go (meantKeys, peerKeys),
// which give "did you mean" for the same keys written in a spec, so that
// Import and Load agree on what a key means.

// outputKeys name a tool's results file, which tenax keeps itself.
var outputKeys = []string{"output", "output_file", "output_path", "output_dir", "results_file", "out"}

// target is the spec key that key, in section, becomes; "" with a note
// says why there is none.
func (im *importer) target(section, key string) (to, note string) {
	switch section {
	case "llm", "agent", "prompt":
		if to := taskKeyFor(key); to != "" {
			if section == "prompt" && to != "task.prompt" && to != "task.system" {
				break
			}
			return to, ""
		}
		if section == "prompt" && (key == "user" || key == "text" || key == "content") {
			return "task.prompt", ""
		}
	}
	if pk, ok := peerKeys[key]; ok {
		return pk.To, pk.Note
	}
	if to, ok := meantKeys[""][key]; ok && to == "input" {
		return "input", ""
	}
	if _, ok := fieldsOfPath("")[key]; ok && key != "task" && specType(key).Kind() != reflect.Struct {
		return key, ""
	}
	return "", "tenax has no key for it; nothing was carried over"
}

// taskKeyFor is the llm task's key for key, by its own name or the name
// other tools give it (meantKeys); "" when the task has none.
func taskKeyFor(key string) string {
	llmKeys := append(slices.Clone(taskKeys["llm"]), "timeout", "output")
	if slices.Contains(llmKeys, key) && key != "tools" {
		return "task." + key
	}
	if to, ok := meantKeys["task"][key]; ok && slices.Contains(llmKeys, to) {
		return "task." + to
	}
	return ""
}

// fieldsOfPath is the keys of the spec mapping at path, by name.
func fieldsOfPath(path string) map[string]int {
	typ := reflect.TypeFor[Spec]()
	if path != "" {
		typ = specType(path)
	}
	_, index := fieldsOf(typ)
	return index
}

// special handles the keys whose value decides what they become: to ""
// and note "" means key is not one of them.
func (im *importer) special(section, key string, l leaf) (to string, value any, note string) {
	switch {
	case key == "mode":
		return modeTarget(l.value)
	case key == "enabled" && section == "batch":
		if b, err := strconv.ParseBool(l.value); err == nil && !b {
			return "concurrency.max", 1, "batch processing off ran one item at a time; tenax runs items concurrently, so this keeps one in flight"
		}
		return "", nil, "nothing to set: tenax always runs a job over many items as one pipeline, concurrency.max in flight"
	case slices.Contains(outputKeys, key) && (section == "processing" || section == "batch"):
		return "", nil, "tenax writes every result to the job's results.jsonl; `tenax run SPEC --output " + l.value + "` also writes them to this file, in input order"
	case key == "api_key" || meantKeys["task"][key] == "api_key":
		return im.apiKey(l.value)
	}
	return "", nil, ""
}

// modeTarget says what a tool's mode becomes: tenax's own task.mode, or
// the concurrency a sequential or parallel mode meant.
func modeTarget(v string) (to string, value any, note string) {
	switch strings.ToLower(v) {
	case "online", "batch":
		return "task.mode", strings.ToLower(v), peerKeys["mode"].Note
	case "sequential", "serial", "one_by_one":
		return "concurrency.max", 1, "one item at a time"
	case "parallel", "concurrent", "async":
		return "", nil, "nothing to set: tenax runs items concurrently, concurrency.max in flight"
	}
	return "", nil, fmt.Sprintf("tenax has no mode %q (task.mode is online or batch: one call per attempt, or the provider's batch API); nothing was carried over", v)
}

// keyVars are the variables an API key is read from, by provider.
var keyVars = map[string]string{
	"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "azure": "AZURE_OPENAI_API_KEY",
	"gemini": "GEMINI_API_KEY", "mock": "MOCK_API_KEY",
}

// apiKey keeps a ${VAR} as it is and replaces a key written in the file
// by the provider's variable: a spec is copied, shown and saved with the
// job, a key belongs in the environment.
func (im *importer) apiKey(v string) (to string, value any, note string) {
	if strings.HasPrefix(v, "${") || v == "" {
		if v == "" {
			return "", nil, "empty: the provider's key is read from the environment"
		}
		return "task.api_key", v, ""
	}
	provider := providerName(im.valueOf("provider"))
	name := keyVars[provider]
	if name == "" {
		name = "OPENAI_API_KEY"
	}
	return "task.api_key", "${" + name + "}", fmt.Sprintf("the key written in the file is not copied: a spec is shown and saved with every job, so export %s and the spec reads it", name)
}

// valueOf is the value of the task's key (provider, model) in the section
// the task comes from; "" when the config has none.
func (im *importer) valueOf(key string) string {
	for _, l := range im.found {
		k, section, ok := im.section(l.path)
		if ok && k == key && (section == "llm" || section == "agent") {
			return l.value
		}
	}
	return ""
}

// providerNames are other tools' names of tenax's providers.
var providerNames = map[string]string{
	"claude": "anthropic", "google": "gemini", "google_genai": "gemini", "azure_openai": "azure",
	"openai_compatible": "openai", "openai-compatible": "openai", "vllm": "openai", "ollama": "openai",
	"litellm": "openai", "aws": "bedrock", "aws_bedrock": "bedrock",
}

// providerName is tenax's name of a tool's provider.
func providerName(v string) string {
	if p, ok := providerNames[strings.ToLower(v)]; ok {
		return p
	}
	return strings.ToLower(v)
}

// value converts a leaf's value to the type of the spec key to; nil with
// a note when it cannot.
func (im *importer) value(to string, l leaf) (v any, note string) {
	typ := specType(to)
	if typ == nil {
		return nil, "tenax has no key " + to
	}
	if l.list != nil {
		if typ.Kind() == reflect.Slice && typ.Elem().Kind() == reflect.String {
			return l.list, ""
		}
		return nil, fmt.Sprintf("a list, where %s takes one value; nothing was carried over", to)
	}
	switch {
	case to == "input":
		return im.inputPath(l.value)
	case to == "task.prompt" || to == "task.system":
		return templateOf(l.value)
	case to == "task.provider":
		p := providerName(l.value)
		if p != strings.ToLower(l.value) {
			return p, fmt.Sprintf("tenax calls %s %q", l.value, p)
		}
		return p, ""
	case to == "retry.max_attempts" && strings.Contains(l.path, "retries"):
		n, err := strconv.Atoi(l.value)
		if err != nil || n < 0 {
			return nil, "not a count of retries; nothing was carried over"
		}
		return n + 1, ""
	}
	return scalarOf(typ, to, l.value)
}

// scalarOf converts a scalar to the type of the spec key to.
func scalarOf(typ reflect.Type, to, s string) (any, string) {
	bad := func(want string) (any, string) {
		return nil, fmt.Sprintf("%s wants %s; %q was not carried over", to, want, s)
	}
	if typ == reflect.TypeFor[time.Duration]() {
		d, err := parseDuration(s)
		if err != nil || d < 0 {
			return bad("a duration")
		}
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return durationText(d), "a number of seconds"
		}
		return durationText(d), ""
	}
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ.Kind() {
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return bad("an integer")
		}
		return n, ""
	case reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return bad("a number")
		}
		return f, ""
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return bad("true or false")
		}
		return b, ""
	case reflect.String:
		return s, ""
	}
	return bad("a mapping")
}

// inputPath rewrites a relative input path so that it names the same file
// from the spec's directory.
func (im *importer) inputPath(p string) (any, string) {
	if p == "" || filepath.IsAbs(p) || im.opts.SourceDir == "" || im.opts.SpecDir == "" {
		return p, ""
	}
	rel, err := filepath.Rel(im.opts.SpecDir, filepath.Join(im.opts.SourceDir, p))
	if err != nil || rel == p {
		return p, ""
	}
	return filepath.ToSlash(rel), "relative to the spec's directory, as every path of a spec is"
}

// templateOf turns a template's {name} placeholders (Python's str.format,
// LangChain's) into tenax's {{.name}}; the note says which it turned.
func templateOf(s string) (any, string) {
	names := placeholderNames(s)
	if len(names) == 0 {
		return s, ""
	}
	var b strings.Builder
	rest := s
	var turned []string
	for _, name := range names {
		needle := "{" + name + "}"
		i := indexPlaceholder(rest, needle)
		if i < 0 {
			break
		}
		b.WriteString(rest[:i])
		b.WriteString("{{." + name + "}}")
		rest = rest[i+len(needle):]
		if !slices.Contains(turned, needle) {
			turned = append(turned, needle)
		}
	}
	b.WriteString(rest)
	return b.String(), fmt.Sprintf("%s became {{.%s}}: a tenax template names an item's field as {{.field}}",
		strings.Join(turned, ", "), strings.Trim(turned[0], "{}")) + plural(len(turned))
}

// plural notes that the example of templateOf's note stands for several.
func plural(n int) string {
	if n > 1 {
		return ", and so on"
	}
	return ""
}

// indexPlaceholder finds needle ({name}) in s outside {{…}} actions.
func indexPlaceholder(s, needle string) int {
	for off := 0; off < len(s); {
		i := strings.Index(s[off:], needle)
		if i < 0 {
			return -1
		}
		at := off + i
		before := strings.Count(s[:at], "{{") - strings.Count(s[:at], "}}")
		if before == 0 && (at == 0 || s[at-1] != '$' && s[at-1] != '{') {
			return at
		}
		off = at + 1
	}
	return -1
}

// impliedKeys sets what both shapes imply without a key saying it: the
// task calls a model.
func (im *importer) impliedKeys() {
	if _, set := im.written["task.type"]; set {
		return
	}
	im.out.set("task.type", "llm")
	im.Lines = append(im.Lines, ImportLine{To: "task.type", ToValue: "llm", Note: "implied: the config's task calls a model"})
}

// importNode is one key of the spec Import writes, with its value or its
// keys.
type importNode struct {
	path  string
	value any
	kids  []*importNode
}

// set sets the dotted path to value.
func (n *importNode) set(path string, value any) {
	at := n
	prefix := ""
	for part := range strings.SplitSeq(path, ".") {
		prefix = join(prefix, part)
		i := slices.IndexFunc(at.kids, func(k *importNode) bool { return k.path == prefix })
		if i < 0 {
			at.kids = append(at.kids, &importNode{path: prefix})
			i = len(at.kids) - 1
		}
		at = at.kids[i]
	}
	at.value = value
}

// yaml is the node's keys as a YAML mapping, in the order of the spec's
// fields (type first in a task).
func (n *importNode) yaml() yaml.MapSlice {
	index := fieldsOfPath(n.path)
	kids := slices.Clone(n.kids)
	slices.SortStableFunc(kids, func(a, b *importNode) int {
		return index[lastKey(a.path)] - index[lastKey(b.path)]
	})
	out := make(yaml.MapSlice, 0, len(kids))
	for _, k := range kids {
		var v any = k.value
		if k.kids != nil {
			v = k.yaml()
		}
		out = append(out, yaml.MapItem{Key: lastKey(k.path), Value: v})
	}
	return out
}

// lastKey is a dotted path's last key.
func lastKey(path string) string {
	return path[strings.LastIndexByte(path, '.')+1:]
}
