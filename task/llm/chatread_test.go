package llm

import (
	"encoding/json"
	"errors"
	"testing"
)

// mockAnswer is the answer tenax's mock gives, the shape of OpenAI's.
const mockAnswer = `{"choices":[{"finish_reason":"stop","index":0,"logprobs":null,"message":{"annotations":[],"content":"Translate into French: w1","refusal":null,"role":"assistant"}}],"created":1796356067,"id":"chatcmpl-mock000000000001","model":"mock-echo","object":"chat.completion","service_tier":"default","system_fingerprint":"fp_mock","usage":{"completion_tokens":6,"completion_tokens_details":{"accepted_prediction_tokens":0,"audio_tokens":0,"reasoning_tokens":0,"rejected_prediction_tokens":0},"prompt_tokens":6,"prompt_tokens_details":{"audio_tokens":0,"cached_tokens":0},"total_tokens":12}}`

// unmarshalChat is decodeChatCompletion's reading before the quick
// reader: encoding/json's, type errors ignored. ok is false for a body it
// refuses.
func unmarshalChat(body []byte) (comp chatCompletion, ok bool) {
	err := json.Unmarshal(body, &comp)
	var typeErr *json.UnmarshalTypeError
	return comp, err == nil || errors.As(err, &typeErr)
}

// sameReading reports whether the quick reader's comp reads as
// encoding/json's want does for decodeChatCompletion: the first choice,
// if any, and the usage.
func sameReading(got, want chatCompletion) bool {
	if (len(got.Choices) > 0) != (len(want.Choices) > 0) || got.Usage != want.Usage {
		return false
	}
	if len(got.Choices) == 0 {
		return true
	}
	g, w := got.Choices[0], want.Choices[0]
	return g.FinishReason == w.FinishReason && g.Message.Content == w.Message.Content &&
		g.Message.Refusal == w.Message.Refusal && len(g.Message.ToolCalls) == 0 && len(w.Message.ToolCalls) == 0 &&
		len(g.ContentFilterResults) == 0 && len(w.ContentFilterResults) == 0
}

// quickCases are answers for the quick reader, the ones it takes and the
// ones it leaves to encoding/json, which read alike either way.
var quickCases = map[string]struct {
	body  string
	quick bool
}{
	"the mock's answer":            {mockAnswer, true},
	"escapes":                      {`{"choices":[{"message":{"content":"a \"b\"\n\t\\ \/ \b\f\r"},"finish_reason":"stop"}]}`, true},
	"UTF-8 text":                   {`{"choices":[{"message":{"content":"l’été"},"finish_reason":"stop"}]}`, true},
	"nulls":                        {`{"choices":[{"message":{"content":null,"refusal":null,"tool_calls":null},"finish_reason":null}],"usage":null}`, true},
	"null choice":                  {`{"choices":[null]}`, true},
	"no choices":                   {`{"choices":[]}`, true},
	"empty tool calls":             {`{"choices":[{"message":{"content":"x","tool_calls":[]}}]}`, true},
	"floats and exponents":         {`{"choices":[],"usage":{"prompt_tokens":12.0,"completion_tokens":1e2,"prompt_tokens_details":{"cached_tokens":-0}}}`, true},
	"whitespace around":            {" \n{\"choices\" : [ {\"message\" : {\"content\" : \"x\"} } ] }\n", true},
	"\\u escape":                   {`{"choices":[{"message":{"content":"l\u2019\ud83d"}}]}`, false},
	"not UTF-8":                    {"{\"choices\":[{\"message\":{\"content\":\"\xff\"}}]}", false},
	"a name in capitals":           {`{"Choices":[{"message":{"content":"x"}}]}`, false},
	"a name escaped":               {`{"choic\u0065s":[{"message":{"content":"x"}}]}`, false},
	"a name not ASCII":             {`{"choices":[{"meſsage":{"content":"x"}}]}`, false},
	"a name twice":                 {`{"usage":{"prompt_tokens":1},"usage":{"completion_tokens":2}}`, false},
	"a number for a string":        {`{"choices":[{"message":{"content":12}}],"usage":{"prompt_tokens":3}}`, false},
	"a string for a number":        {`{"choices":[],"usage":{"prompt_tokens":"3","completion_tokens":4}}`, false},
	"a number too large":           {`{"usage":{"prompt_tokens":1e400}}`, false},
	"choices not an array":         {`{"choices":{"message":{"content":"x"}}}`, false},
	"tool calls":                   {`{"choices":[{"message":{"tool_calls":[{"id":"t","function":{"name":"f","arguments":"{}"}}]}}]}`, false},
	"content filter":               {`{"choices":[{"finish_reason":"content_filter","content_filter_results":{"hate":{"filtered":true}}}]}`, false},
	"not an object":                {`["choices"]`, false},
	"not JSON":                     {`{"choices":[`, false},
	"trailing garbage":             {`{"choices":[]} x`, false},
	"a control byte in a string":   {"{\"choices\":[{\"message\":{\"content\":\"a\x01\"}}]}", false},
	"deeper than encoding/json":    {`{"x":` + repeat("[", 10001) + repeat("]", 10001) + `}`, false},
	"several choices, second odd":  {`{"choices":[{"message":{"content":"first"}},{"message":{"content":12}}]}`, true},
	"unknown members of any shape": {`{"x":{"Choices":[1,{"a":null}]},"choices":[{"logprobs":{"content":[{"token":"a"}]},"message":{"role":"assistant","content":"y"}}]}`, true},
}

func repeat(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}

func TestTheQuickReaderReadsAnAnswerAsEncodingJSONDoes(t *testing.T) {
	for name, tc := range quickCases {
		t.Run(name, func(t *testing.T) {
			got, ok := readChatCompletion([]byte(tc.body))
			if ok != tc.quick {
				t.Fatalf("quick reader took it: %v, want %v", ok, tc.quick)
			}
			want, valid := unmarshalChat([]byte(tc.body))
			if ok && (!valid || !sameReading(got, want)) {
				t.Errorf("quick reader read %+v, encoding/json %+v (valid %v)", got, want, valid)
			}
		})
	}
}

// FuzzTheQuickReaderReadsAnAnswerAsEncodingJSONDoes checks that whatever
// the quick reader takes, encoding/json takes too and reads alike.
func FuzzTheQuickReaderReadsAnAnswerAsEncodingJSONDoes(f *testing.F) {
	for _, tc := range quickCases {
		f.Add(tc.body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got, ok := readChatCompletion([]byte(body))
		if !ok {
			return
		}
		want, valid := unmarshalChat([]byte(body))
		if !valid || !sameReading(got, want) {
			t.Errorf("%q: quick reader read %+v, encoding/json %+v (valid %v)", body, got, want, valid)
		}
	})
}

// TestTheMockAnswerIsReadQuickly guards the quick path: the answer every
// call gets from an OpenAI-shaped server must not fall back to
// encoding/json's slower reading.
func TestTheMockAnswerIsReadQuickly(t *testing.T) {
	if _, ok := readChatCompletion([]byte(mockAnswer)); !ok {
		t.Fatal("the mock's answer is read by encoding/json, not the quick reader")
	}
}

func BenchmarkDecodeChatCompletion(b *testing.B) {
	body := []byte(mockAnswer)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeChatCompletion(body); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReadingTheMockAnswerAllocatesLittle guards the quick reader's
// allocations: the body's copy as a string, the choice and the reply's
// text; encoding/json's reading took 13.
func TestReadingTheMockAnswerAllocatesLittle(t *testing.T) {
	if raceEnabled {
		t.Skip("-race instrumentation allocates")
	}
	body := []byte(mockAnswer)
	if n := testing.AllocsPerRun(100, func() { _, _ = decodeChatCompletion(body) }); n > 3 {
		t.Errorf("decodeChatCompletion allocates %v times, want at most 3", n)
	}
}
