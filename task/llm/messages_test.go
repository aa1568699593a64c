package llm

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// scripted is a transport that keeps every request's body and gives the
// answers in turn, the last one again once they run out.
type scripted struct {
	bodies      [][]byte
	answers     []string
	contentType string
}

func (s *scripted) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	s.bodies = append(s.bodies, body)
	answer := s.answers[min(len(s.bodies), len(s.answers))-1]
	ct := s.contentType
	if ct == "" {
		ct = "application/json"
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ct}},
		Body: io.NopCloser(strings.NewReader(answer)), Request: req}, nil
}

// sdkMessagesBodies are the bodies the anthropic SDK itself encodes for
// tk's call c, the first and one more for each paused answer sent back:
// its parameters built field by field, a paused answer sent back with the
// SDK's Message.ToParam, and extra_body applied with WithJSONSet, as tenax
// sent every request before it built the body.
func sdkMessagesBodies(t *testing.T, tk *Task, c *call, paused []string) [][]byte {
	t.Helper()
	params := tk.anthropicBase()
	params.MaxTokens = int64(c.maxTokens)
	for _, m := range c.msgs {
		switch m.Role {
		case "system":
			block := anthropic.TextBlockParam{Text: m.Content}
			if tk.cfg.CachePrompt {
				block.CacheControl = anthropic.NewCacheControlEphemeralParam()
			}
			params.System = []anthropic.TextBlockParam{block}
		case "assistant":
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(anthropic.NewTextBlock(m.Content)))
		default:
			params.Messages = append(params.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Content)))
		}
	}
	saver := &keptBody{answer: `{"content":[]}`}
	opts := []aoption.RequestOption{aoption.WithHTTPClient(&http.Client{Transport: saver}),
		aoption.WithBaseURL("http://x.invalid/"), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0),
		aoption.WithoutEnvironmentDefaults(), aoption.WithRequestTimeout(DefaultTimeout)}
	for _, name := range sortedKeys(tk.cfg.ExtraBody) {
		opts = append(opts, aoption.WithJSONSet(sjsonKey(name), tk.cfg.ExtraBody[name]))
	}
	client := anthropic.NewClient(opts...)
	var bodies [][]byte
	for i := 0; ; i++ {
		if _, err := client.Messages.New(t.Context(), params); err != nil {
			t.Fatalf("the SDK's own request: %v", err)
		}
		bodies = append(bodies, saver.body)
		if i == len(paused) {
			return bodies
		}
		var msg anthropic.Message
		if err := json.Unmarshal([]byte(paused[i]), &msg); err != nil {
			t.Fatalf("the SDK cannot read %s: %v", paused[i], err)
		}
		params.Messages = append(params.Messages, msg.ToParam())
	}
}

// pausedAnswer is a turn the API paused during a web search, as the API
// writes it (text blocks carry "citations": null).
const pausedAnswer = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",
	"content":[{"type":"text","text":"Let me search for «chat».","citations":null},
		{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{"query":"chat noir"}},
		{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":[{"type":"web_search_result","title":"Chat","url":"https://example.com/chat","encrypted_content":"EqgfCioI","page_age":"2 days ago"}]}],
	"stop_reason":"pause_turn","stop_sequence":null,
	"usage":{"input_tokens":2000,"output_tokens":50,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"server_tool_use":{"web_search_requests":1},"service_tier":"standard"}}`

// withoutNulls is v with the members whose value is null taken out of
// every object: the SDK's ToParam leaves out what an answer gives as
// null, where tenax sends the answer back as it came.
func withoutNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if x == nil {
				delete(v, k)
			} else {
				v[k] = withoutNulls(x)
			}
		}
	case []any:
		for i, x := range v {
			v[i] = withoutNulls(x)
		}
	}
	return v
}

func TestTheMessagesRequestTenaxEncodesIsTheOneTheSDKWouldEncode(t *testing.T) {
	temp, topP := 0.3, 0.9
	schema := json.RawMessage(`{"type":"object","properties":{"fr":{"type":"string"}},"required":["fr"],"additionalProperties":false}`)
	heal := &task.Feedback{PreviousOutput: `{"fr": "cha`, Message: "Your previous output was cut off.", Attempt: 1}
	done := `{"content":[{"type":"text","text":"{\"fr\":\"chat noir\"}"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":3}}`
	tests := []struct {
		name   string
		cfg    Config
		fb     *task.Feedback
		paused []string
	}{
		{"plain", Config{Model: "claude-sonnet-4-5", Prompt: "Translate {{.word}}"}, nil, nil},
		{"system", Config{Model: "claude-sonnet-4-5", System: "Be <terse> & exact: {{.word}}.", Prompt: "Translate {{.word}}"}, nil, nil},
		{"system cached", Config{Model: "claude-sonnet-4-5", System: "Be terse.", Prompt: "Translate {{.word}}", CachePrompt: true}, nil, nil},
		{"sampling and stop", Config{Model: "claude-sonnet-4-5", Prompt: "Translate {{.word}}",
			Temperature: &temp, TopP: &topP, Stop: []string{"\n\n", "END"}, MaxTokens: 50}, nil, nil},
		{"thinking and effort", Config{Model: "claude-opus-4-5", Prompt: "{{.word}}", ThinkingBudget: 2048, MaxTokens: 8000, ReasoningEffort: "low"}, nil, nil},
		{"output_config schema", Config{Model: "claude-sonnet-4-5", Prompt: "{{.word}} as JSON", Output: OutputJSON, Schema: schema}, nil, nil},
		{"forced output tool for an older model", Config{Model: "claude-3-5-haiku-latest", System: "Translate.", Prompt: "{{.word}}", Output: OutputJSON, Schema: schema}, nil, nil},
		{"heal re-ask", Config{Model: "claude-sonnet-4-5", System: "Translate.", Prompt: "{{.word}}"}, heal, nil},
		{"extra_body", Config{Model: "claude-sonnet-4-5", Prompt: "{{.word}}",
			ExtraBody: map[string]any{"metadata": map[string]any{"user_id": "u-1"}, "a.b": 1, "service_tier": "auto", "top_k": 5}}, nil, nil},
		{"extra_body replaces max_tokens, the model and the system prompt", Config{Model: "claude-sonnet-4-5", System: "Be terse.", Prompt: "{{.word}}", MaxTokens: 9,
			ExtraBody: map[string]any{"max_tokens": 3, "model": "other", "system": "fixed"}}, nil, nil},
		{"extra_body replaces the messages", Config{Model: "claude-sonnet-4-5", Prompt: "{{.word}}",
			ExtraBody: map[string]any{"messages": []any{map[string]any{"role": "user", "content": "fixed"}}}}, nil, nil},
		{"paused turn sent back", Config{Model: "claude-sonnet-4-5", System: "Search, then translate.", Prompt: "{{.word}}"}, nil, []string{pausedAnswer}},
		{"paused twice", Config{Model: "claude-sonnet-4-5", Prompt: "{{.word}}", CachePrompt: true}, nil, []string{pausedAnswer, pausedAnswer}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			saver := &scripted{answers: append(append([]string(nil), tt.paused...), done)}
			cfg := tt.cfg
			cfg.Provider, cfg.BaseURL, cfg.APIKey = ProviderAnthropic, "http://x.invalid", "k"
			cfg.HTTPClient = &http.Client{Transport: saver}
			tk := mustNew(t, cfg)
			it := task.Item{Idx: 1, Fields: map[string]any{"word": "chat «noir» </script>"}, Feedback: tt.fb}
			if _, err := tk.Run(t.Context(), it); err != nil {
				t.Fatalf("Run: %v", err)
			}
			c, err := tk.prepare(it)
			if err != nil {
				t.Fatal(err)
			}
			want := sdkMessagesBodies(t, tk, c, tt.paused)
			if len(saver.bodies) != len(want) {
				t.Fatalf("tenax sent %d requests, the SDK would have sent %d", len(saver.bodies), len(want))
			}
			for i, body := range saver.bodies {
				got, sdk := jsonValue(t, body), jsonValue(t, want[i])
				if i > 0 {
					got, sdk = withoutNulls(got), withoutNulls(sdk)
				}
				if !reflect.DeepEqual(got, sdk) {
					t.Errorf("request %d: tenax sent\n%s\nthe SDK would have sent\n%s", i, body, want[i])
				}
			}
		})
	}
}

func TestAPausedTurnIsSentBackAsTheAnswerGaveIt(t *testing.T) {
	saver := &scripted{answers: []string{pausedAnswer, `{"content":[{"type":"text","text":" Chat noir."}],"stop_reason":"end_turn","usage":{"input_tokens":2100,"output_tokens":4}}`}}
	tk := mustNew(t, Config{Provider: ProviderAnthropic, BaseURL: "http://x.invalid", APIKey: "k", Model: "claude-sonnet-4-5",
		Prompt: "{{.word}}", HTTPClient: &http.Client{Transport: saver}})
	res, err := tk.Run(t.Context(), task.Item{Idx: 1, Fields: map[string]any{"word": "chat"}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(saver.bodies) != 2 {
		t.Fatalf("tenax sent %d requests, want the first and the paused turn sent back", len(saver.bodies))
	}
	var sent struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(saver.bodies[1], &sent); err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal([]byte(pausedAnswer), &answer); err != nil {
		t.Fatal(err)
	}
	last := sent.Messages[len(sent.Messages)-1]
	if last.Role != "assistant" || !reflect.DeepEqual(jsonValue(t, last.Content), jsonValue(t, answer.Content)) {
		t.Errorf("the paused turn went back as %s %s, want the answer's content as it came:\n%s", last.Role, last.Content, answer.Content)
	}
	var out string
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatalf("output %s: %v", res.Output, err)
	}
	if want := "Let me search for «chat». Chat noir."; out != want {
		t.Errorf("output %q, want the text of both pieces, %q", out, want)
	}
	if res.Usage.InputTokens != 4100 || res.Usage.OutputTokens != 54 {
		t.Errorf("usage %+v, want both pieces' (4100 in, 54 out)", res.Usage)
	}
}

// sdkMessageReply reads answer with the SDK's decoder, as tenax read
// every answer before it decoded them itself.
func sdkMessageReply(t testing.TB, tk *Task, answer []byte) (reply, error) {
	var msg anthropic.Message
	if err := json.Unmarshal(answer, &msg); err != nil {
		return reply{}, err
	}
	u := msg.Usage
	rep := reply{
		finish: string(msg.StopReason),
		usage: task.Usage{
			InputTokens:       u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
			OutputTokens:      u.OutputTokens,
			CachedInputTokens: u.CacheReadInputTokens,
			CacheWriteTokens:  u.CacheCreationInputTokens,
		},
	}
	// Where tenax departs from the SDK on purpose: a count no call can
	// have spent is -1 (the estimate replaces it) and noted.
	var n usageCounts
	in, out := n.count("input_tokens", float64(u.InputTokens)), n.count("output_tokens", float64(u.OutputTokens))
	created, read := n.count("cache_creation_input_tokens", float64(u.CacheCreationInputTokens)), n.count("cache_read_input_tokens", float64(u.CacheReadInputTokens))
	if n.impossible != "" {
		rep.usage.Impossible = n.impossible
		rep.usage.OutputTokens, rep.usage.CachedInputTokens, rep.usage.CacheWriteTokens = out, max(read, 0), max(created, 0)
		if in < 0 || created < 0 || read < 0 {
			rep.usage.InputTokens = -1
		}
	}
	var b strings.Builder
	for _, block := range msg.Content {
		switch block.Type {
		case "text":
			b.WriteString(block.Text)
		case "tool_use":
			if tk.structured.Mode == ModeTool && block.Name == OutputTool {
				b.Reset()
				b.Write(block.Input)
			} else {
				rep.calls = append(rep.calls, agent.Call{ID: block.ID, Name: block.Name, Arguments: block.Input})
			}
		}
	}
	rep.content = b.String()
	if msg.StopReason == anthropic.StopReasonRefusal {
		rep.refusal = msg.StopDetails.Explanation
	}
	return rep, nil
}

// messageAnswers are answers as the messages API writes them.
var messageAnswers = map[string]string{
	"text and usage with cache": `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Bonjour","citations":null}],
		"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":10,"cache_creation_input_tokens":50,"cache_read_input_tokens":800,
		"cache_creation":{"ephemeral_5m_input_tokens":50,"ephemeral_1h_input_tokens":0},"server_tool_use":null,"service_tier":"standard"}}`,
	"output tool": `{"id":"msg_2","type":"message","role":"assistant","model":"claude-3-5-haiku-20241022","content":[{"type":"text","text":"Here it is."},
		{"type":"tool_use","id":"toolu_1","name":"output","input":{"fr": "chat", "n": [1, 2.5, null]}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":400,"output_tokens":30}}`,
	"another tool":        `{"content":[{"type":"tool_use","id":"toolu_1","name":"search","input":{"q":"x"}},{"type":"text","text":"after"}],"stop_reason":"tool_use","usage":{"input_tokens":4,"output_tokens":3}}`,
	"paused":              pausedAnswer,
	"cut at max_tokens":   `{"content":[{"type":"text","text":"{\"fr\": \"ch"}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":5}}`,
	"stop sequence":       `{"content":[{"type":"text","text":"un"}],"stop_reason":"stop_sequence","stop_sequence":"END","usage":{"input_tokens":20,"output_tokens":1}}`,
	"refusal":             `{"content":[],"stop_reason":"refusal","stop_details":{"type":"refusal","category":"cyber","explanation":"I can't help with that."},"usage":{"input_tokens":20,"output_tokens":0}}`,
	"thinking":            `{"content":[{"type":"thinking","thinking":"Let me think.","signature":"EqQB"},{"type":"redacted_thinking","data":"EmwK"},{"type":"text","text":"Chat."}],"stop_reason":"end_turn","usage":{"input_tokens":20,"output_tokens":200}}`,
	"usage as floats":     `{"content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","usage":{"input_tokens":12.0,"output_tokens":3.0}}`,
	"no content no usage": `{"type":"message"}`,
	"unicode and escapes": `{"content":[{"type":"text","text":"l\u2019\u00e9t\u00e9 \"chaud\"\n<b>"}],"stop_reason":"end_turn"}`,
}

func TestAMessageReadsAsTheSDKReadsIt(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"fr":{"type":"string"}},"required":["fr"]}`)
	tasks := map[string]Config{
		"text":                   {Model: "claude-sonnet-4-5", Prompt: "hi"},
		"forced tool (ModeTool)": {Model: "claude-3-5-haiku-latest", Prompt: "hi", Output: OutputJSON, Schema: schema},
	}
	for tname, cfg := range tasks {
		cfg.Provider, cfg.APIKey = ProviderAnthropic, "k"
		tk := mustNew(t, cfg)
		for name, answer := range messageAnswers {
			t.Run(tname+"/"+name, func(t *testing.T) {
				msg, err := decodeMessage([]byte(answer))
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				want, err := sdkMessageReply(t, tk, []byte(answer))
				if err != nil {
					t.Fatalf("the SDK cannot read it: %v", err)
				}
				if got := tk.anthropicReply(msg); !reflect.DeepEqual(got, want) {
					t.Errorf("tenax read %+v, the SDK reads %+v", got, want)
				}
			})
		}
	}
}

func TestAMessageThatIsNotJSONIsAnError(t *testing.T) {
	for _, answer := range []string{``, `{"content":[`, `<html>busy</html>`, `{"content":[]} trailing`} {
		if msg, err := decodeMessage([]byte(answer)); err == nil {
			t.Errorf("%q read as %+v, want an error", answer, msg)
		}
	}
}

func TestAnAnthropicAnswerThatIsNotJSONIsAMalformedResponse(t *testing.T) {
	saver := &scripted{answers: []string{`{"content":[{"type":"text","text":"hi"}]}`}, contentType: "text/html"}
	tk := mustNew(t, Config{Provider: ProviderAnthropic, BaseURL: "http://x.invalid", APIKey: "k", Model: "claude-sonnet-4-5",
		Prompt: "hi", HTTPClient: &http.Client{Transport: saver}})
	_, err := tk.Run(t.Context(), task.Item{Idx: 1})
	if err == nil || !strings.Contains(err.Error(), "malformed response") {
		t.Fatalf("err = %v, want a malformed response", err)
	}
	if d := classify.Classify(err); d.Class != classify.Retryable {
		t.Errorf("classified %v, want retryable", d)
	}
}

func TestAFieldOfTheWrongTypeIsReadAsAbsent(t *testing.T) {
	tk := mustNew(t, Config{Provider: ProviderAnthropic, APIKey: "k", Model: "claude-sonnet-4-5", Prompt: "hi"})
	msg, err := decodeMessage([]byte(`{"content":[{"type":"text","text":{"a":1}},{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":[1],"output_tokens":2}}`))
	if err != nil {
		t.Fatalf("decode: %v, want the answer read as far as it goes", err)
	}
	want := reply{content: "ok", finish: "end_turn", usage: task.Usage{OutputTokens: 2}}
	if got := tk.anthropicReply(msg); !reflect.DeepEqual(got, want) {
		t.Errorf("tenax read %+v, want %+v", got, want)
	}
}

// FuzzAMessageReadsAsTheSDKReadsIt builds answers of the messages API's
// shape from arbitrary texts, names, tool inputs, stop reasons and token
// counts, and reads each with tenax's decoder and with the SDK's.
func FuzzAMessageReadsAsTheSDKReadsIt(f *testing.F) {
	f.Add("Bonjour", "output", `{"fr":"chat"}`, " after", "end_turn", "", int64(100), int64(10), int64(50), int64(800), false)
	f.Add("l\u2019été \"chaud\"\n<b>", "output", `{"n": [1, 2.5, null], "s": "\u00e9"}`, "", "tool_use", "", int64(1), int64(0), int64(0), int64(0), true)
	f.Add("", "search", `"just a string"`, "x", "refusal", "I can't help with that.", int64(0), int64(0), int64(0), int64(0), true)
	f.Add("\xff\xfe", "output", `not json`, "\u2028", "pause_turn", "", int64(1)<<40, int64(-1), int64(3), int64(4), false)
	schema := json.RawMessage(`{"type":"object","properties":{"fr":{"type":"string"}},"required":["fr"]}`)
	text := mustNew(f, Config{Provider: ProviderAnthropic, APIKey: "k", Model: "claude-sonnet-4-5", Prompt: "hi"})
	tool := mustNew(f, Config{Provider: ProviderAnthropic, APIKey: "k", Model: "claude-3-5-haiku-latest", Prompt: "hi", Output: OutputJSON, Schema: schema})
	f.Fuzz(func(t *testing.T, before, name, input, after, stop, explanation string, in, out, created, read int64, useTool bool) {
		tk := text
		if useTool {
			tk = tool
		}
		var toolInput any = input
		if json.Valid([]byte(input)) {
			toolInput = json.RawMessage(input)
		}
		answer, err := json.Marshal(map[string]any{
			"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": []any{
				map[string]any{"type": "text", "text": before, "citations": nil},
				map[string]any{"type": "tool_use", "id": "toolu_1", "name": name, "input": toolInput},
				map[string]any{"type": "thinking", "thinking": after, "signature": "s"},
				map[string]any{"type": "text", "text": after},
			},
			"stop_reason": stop, "stop_sequence": nil,
			"stop_details": map[string]any{"type": "refusal", "explanation": explanation},
			"usage": map[string]any{"input_tokens": in, "output_tokens": out,
				"cache_creation_input_tokens": created, "cache_read_input_tokens": read},
		})
		if err != nil {
			t.Skip("not an answer the API could write")
		}
		want, err := sdkMessageReply(t, tk, answer)
		if err != nil {
			t.Fatalf("the SDK cannot read %s: %v", answer, err)
		}
		msg, err := decodeMessage(answer)
		if err != nil {
			t.Fatalf("tenax cannot read %s, the SDK reads it as %+v: %v", answer, want, err)
		}
		if got := tk.anthropicReply(msg); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\ntenax read %+v,\nthe SDK reads %+v", answer, got, want)
		}
	})
}
