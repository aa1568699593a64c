package llm

import "testing"

// keyCases are calls whose canonical JSON the quick encoder must write as
// encoding/json does, byte for byte: a changed byte is a changed key, and
// every entry of every cache already written would be missed.
var keyCases = map[string]Call{
	"plain": {Provider: "openai", BaseURL: "https://api.openai.com/v1/", Model: "gpt-4o-mini",
		Messages: []Message{{"user", "hi"}}, MaxTokens: 100, Output: "json"},
	"no messages":    {Provider: "openai", Model: "m"},
	"empty messages": {Provider: "openai", Model: "m", Messages: []Message{}},
	"temperature":    {Provider: "mock", Model: "m", Messages: []Message{{"system", "s"}, {"user", "u"}}, Temperature: ptr(0.7)},
	"temperature 0":  {Provider: "mock", Model: "m", Temperature: ptr(0), MaxTokens: -1},
	"HTML and quotes": {Provider: "openai", Model: "m",
		Messages: []Message{{"user", `<b>"Tom" & 'Jerry'</b> \ back`}}},
	"control bytes and unicode": {Provider: "openai", Model: "m",
		Messages: []Message{{"user", "line\nnext\ttab\x01\x7f l’été \u2028 \u2029 日本"}}},
	"invalid UTF-8": {Provider: "openai", Model: "m", Messages: []Message{{"user", "bad \xff\xfe byte"}}},
	"extra":         {Provider: "openai", Model: "m", Extra: map[string]any{"top_p": 0.5, "stop": []string{"x"}}},
}

func ptr(f float64) *float64 { return &f }

func TestTheQuickCacheKeyIsEncodingJSONs(t *testing.T) {
	for name, c := range keyCases {
		t.Run(name, func(t *testing.T) {
			want := canonicalCallJSON(c)
			got, ok := appendCanonicalCall(nil, c)
			if !ok {
				if len(c.Extra) == 0 {
					t.Fatal("the quick encoder refused a call without Extra")
				}
				return
			}
			if string(got) != string(want) {
				t.Errorf("quick encoder wrote\n%s\nencoding/json\n%s", got, want)
			}
		})
	}
}

// TestTheCacheKeyOfACallStaysTheSame pins one key: the keys of caches
// already written on disk must not change with the encoder.
func TestTheCacheKeyOfACallStaysTheSame(t *testing.T) {
	const want = "a27fe89aef5bb80758b3fe9777b119ab31a5cbd7472bd1fc9791fb1150d3a385" // main's, ac92d93
	if got := CacheKey(keyCases["HTML and quotes"]); got != want {
		t.Errorf("CacheKey = %s, want %s", got, want)
	}
}

func FuzzTheQuickCacheKeyIsEncodingJSONs(f *testing.F) {
	f.Add("openai", "https://x/v1/", "m", "user", "hi", "json", 10, 0.5, true)
	f.Add("mock", "", "", "system", "<&>\"\\\n\x00\u2028\xff", "", -1, 0.0, false)
	f.Fuzz(func(t *testing.T, provider, baseURL, model, role, content, output string, maxTokens int, temp float64, hasTemp bool) {
		c := Call{Provider: provider, BaseURL: baseURL, Model: model, Messages: []Message{{role, content}, {content, role}},
			MaxTokens: maxTokens, Output: output}
		if hasTemp {
			c.Temperature = &temp
		}
		want := canonicalCallJSON(c)
		got, ok := appendCanonicalCall(nil, c)
		if !ok || string(got) != string(want) {
			t.Errorf("quick encoder wrote %s (ok %v), encoding/json %s", got, ok, want)
		}
	})
}

func BenchmarkCacheKey(b *testing.B) {
	c := keyCases["plain"]
	b.ReportAllocs()
	for b.Loop() {
		CacheKey(c)
	}
}

// TestACacheKeyAllocatesOnlyItsText guards the quick encoder: every call
// with the cache on computes a key, and encoding/json's reflection took
// two allocations more.
func TestACacheKeyAllocatesOnlyItsText(t *testing.T) {
	if raceEnabled {
		t.Skip("-race instrumentation allocates")
	}
	c := keyCases["plain"]
	if n := testing.AllocsPerRun(100, func() { CacheKey(c) }); n > 2 {
		t.Errorf("CacheKey allocates %v times, want at most 2 (the hex text and its bytes)", n)
	}
}
