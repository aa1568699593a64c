package llm

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// maxQuickDepth is encoding/json's nesting limit: a body with more
// brackets than this could be nested deeper, which encoding/json refuses
// and gjson's validator does not, so readChatCompletion leaves it alone.
const maxQuickDepth = 10000

// readChatCompletion reads the usual chat completion quickly: one
// validating pass of gjson and one walk of the members tenax reads, where
// encoding/json's Unmarshal made a validating pass and a decoding one,
// some 9 µs of a call's CPU for a 600-byte answer (docs/benchmarks.md,
// "CPU per LLM call"). ok is false for anything whose reading by
// encoding/json it does not reproduce for certain, and decodeChatCompletion
// then reads it with encoding/json as before: a body that is not valid
// JSON or not an object; a member name that is escaped, not ASCII, a
// duplicate of one tenax reads, or the same as one but for case (which
// encoding/json matches); a value of a type encoding/json would not
// store; a string with a \u escape or bytes that are not UTF-8 (which
// encoding/json replaces); a number float64 cannot hold; tool calls; a
// content_filter finish (its raw verdict is read as encoding/json reads
// it). Only the first choice is kept: it is all decodeChatCompletion uses,
// and encoding/json's reading of the others cannot fail it.
func readChatCompletion(body []byte) (comp chatCompletion, ok bool) {
	if bytes.Count(body, []byte{'{'})+bytes.Count(body, []byte{'['}) > maxQuickDepth || !gjson.ValidBytes(body) {
		return chatCompletion{}, false
	}
	top := gjson.ParseBytes(body)
	if !top.IsObject() {
		return chatCompletion{}, false
	}
	ok = readMembers(top, []string{"choices", "usage"}, func(i int, v gjson.Result) bool {
		if i == 0 {
			return readChoices(v, &comp)
		}
		return readUsage(v, &comp.Usage)
	})
	return comp, ok
}

// readChoices reads the first of a choices array into comp.
func readChoices(v gjson.Result, comp *chatCompletion) bool {
	switch {
	case v.Type == gjson.Null:
		return true
	case !v.IsArray():
		return false
	}
	ok := true
	v.ForEach(func(_, first gjson.Result) bool {
		comp.Choices = []chatChoice{{}}
		ok = readChoice(first, &comp.Choices[0])
		return false
	})
	return ok
}

// readChoice reads a choice: its finish reason and message.
func readChoice(v gjson.Result, ch *chatChoice) bool {
	switch {
	case v.Type == gjson.Null:
		return true
	case !v.IsObject():
		return false
	}
	ok := readMembers(v, []string{"finish_reason", "message", "content_filter_results"}, func(i int, v gjson.Result) bool {
		switch i {
		case 0:
			return readString(v, &ch.FinishReason)
		case 1:
			return readMessage(v, &ch.Message)
		}
		return false // Azure's verdict: read by encoding/json
	})
	return ok && ch.FinishReason != "content_filter"
}

// readMessage reads a choice's message: its content and refusal, and no
// tool calls.
func readMessage(v gjson.Result, m *chatMessage) bool {
	switch {
	case v.Type == gjson.Null:
		return true
	case !v.IsObject():
		return false
	}
	return readMembers(v, []string{"content", "refusal", "tool_calls"}, func(i int, v gjson.Result) bool {
		switch i {
		case 0:
			return readString(v, &m.Content)
		case 1:
			return readString(v, &m.Refusal)
		}
		return v.Type == gjson.Null || v.IsArray() && len(v.Array()) == 0
	})
}

// readUsage reads a chat completion's usage.
func readUsage(v gjson.Result, u *chatUsage) bool {
	switch {
	case v.Type == gjson.Null:
		return true
	case !v.IsObject():
		return false
	}
	return readMembers(v, []string{"prompt_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details"}, func(i int, v gjson.Result) bool {
		switch i {
		case 0:
			return readNumber(v, &u.PromptTokens)
		case 1:
			return readNumber(v, &u.CompletionTokens)
		case 2:
			return readDetail(v, "cached_tokens", &u.PromptTokensDetails.CachedTokens)
		}
		return readDetail(v, "reasoning_tokens", &u.CompletionTokensDetails.ReasoningTokens)
	})
}

// readDetail reads the one number tenax reads of a usage's details.
func readDetail(v gjson.Result, name string, n *float64) bool {
	switch {
	case v.Type == gjson.Null:
		return true
	case !v.IsObject():
		return false
	}
	return readMembers(v, []string{name}, func(_ int, v gjson.Result) bool { return readNumber(v, n) })
}

// readMembers calls set with the index in names of each member of obj so
// named, and skips the others. It is false, and stops, when set is, or
// when a member's name is one encoding/json might match otherwise than
// by its plain text: escaped, not ASCII, the same as one of names but for
// case, or one of names a second time (encoding/json would merge them).
func readMembers(obj gjson.Result, names []string, set func(i int, v gjson.Result) bool) bool {
	var seen uint64
	ok := true
	obj.ForEach(func(k, v gjson.Result) bool {
		if strings.IndexByte(k.Raw, '\\') >= 0 || !ascii(k.Raw) {
			ok = false
			return false
		}
		for i, name := range names {
			if k.Str == name {
				if seen&(1<<i) != 0 || !set(i, v) {
					ok = false
					return false
				}
				seen |= 1 << i
				return true
			}
			if strings.EqualFold(k.Str, name) {
				ok = false
				return false
			}
		}
		return true
	})
	return ok
}

// readString stores a JSON string in s, as encoding/json would; null
// leaves s alone.
func readString(v gjson.Result, s *string) bool {
	switch {
	case v.Type == gjson.Null:
		return true
	case v.Type != gjson.String, strings.Contains(v.Raw, `\u`), !utf8.ValidString(v.Raw):
		return false
	}
	*s = v.Str
	return true
}

// readNumber stores a JSON number in n, as encoding/json would; null
// leaves n alone.
func readNumber(v gjson.Result, n *float64) bool {
	switch v.Type {
	case gjson.Null:
		return true
	case gjson.Number:
		f, err := strconv.ParseFloat(v.Raw, 64)
		if err != nil {
			return false
		}
		*n = f
		return true
	}
	return false
}

// ascii reports whether s is all ASCII.
func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
