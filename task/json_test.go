package task_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tenaxhq/tenax/task"
)

// TestAppendJSONStringMatchesEncodingJSON: the hot-path encoder writes what
// encoding/json writes without HTML escaping, invalid UTF-8 and line
// separators included.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " and \ back`, "tab\tnew\nline\r", "\x00\x1f", "辆 ü", "bad \xff utf8", "sep \u2028 \u2029", "<html> & co"} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // records stay readable: no \u003c for <
		_ = enc.Encode(s)
		want := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
		if got := task.AppendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("AppendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
}
