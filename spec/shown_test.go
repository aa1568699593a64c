package spec

import (
	"strings"
	"testing"
)

// TestSpecErrorsPrintedTheSecretValueOfAVariable: a ${VAR} expanded into a
// key of the wrong type printed its value (`expected an integer, got
// "tok-SECRET-777"`); the error names the variable instead.
func TestSpecErrorsPrintedTheSecretValueOfAVariable(t *testing.T) {
	const secret = "tok-SECRET-777"
	long := "sk-" + strings.Repeat("Z", 300) // longer than an error quotes whole
	env := func(name string) (string, bool) {
		switch name {
		case "API_TOKEN":
			return secret, true
		case "LONG_TOKEN":
			return long, true
		case "PLAIN":
			return "gpt-SECRET-ish", true
		}
		return "", false
	}
	const task = "task:\n  type: exec\n  argv: [echo]\n"
	tests := []struct {
		name, src, want string
	}{
		{"an integer", task + "retry:\n  max_attempts: ${API_TOKEN}\n",
			`job.yaml:5:17: retry.max_attempts: expected an integer, got "${API_TOKEN}"`},
		{"an integer, the variable inside other text", task + "retry:\n  max_attempts: 1${API_TOKEN}\n",
			`job.yaml:5:17: retry.max_attempts: expected an integer, got "1${API_TOKEN}"`},
		{"a bool", task + "cache:\n  enabled: ${API_TOKEN}\n",
			`job.yaml:5:12: cache.enabled: expected true or false, got "${API_TOKEN}"`},
		{"a number", task + "budget:\n  max_cost_usd: ${API_TOKEN}\n",
			`job.yaml:5:17: budget.max_cost_usd: expected a number, got "${API_TOKEN}"`},
		{"a duration", task + "retry:\n  max_hint: ${API_TOKEN}\n",
			`job.yaml:5:13: retry.max_hint: invalid duration "${API_TOKEN}"`},
		{"an enumeration, whatever the variable's name", task + "  output: ${PLAIN}\n",
			`job.yaml:4:11: task.output: unknown value "${PLAIN}" (want text or json)`},
		{"a value too long to quote whole", task + "retry:\n  max_attempts: ${LONG_TOKEN}\n",
			`job.yaml:5:17: retry.max_attempts: expected an integer, got "${LONG_TOKEN}"`},
		{"a path that does not tell its format", "input: data/${API_TOKEN}.dat\n" + task,
			`job.yaml:1:8: input: cannot tell the format of "data/${API_TOKEN}.dat" from its extension`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("job.yaml", []byte(tt.src), "/specs", env)
			if err == nil {
				t.Fatalf("Parse accepted %q", tt.src)
			}
			got := err.Error()
			for _, value := range []string{secret, "SECRET", long[:40]} {
				if strings.Contains(got, value) {
					t.Errorf("the error shows the variable's value %.40q:\n%s", value, got)
				}
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("Parse:\n%s\nwant a line starting:\n%s", got, tt.want)
			}
		})
	}
}

// TestUnparseableBaseURLPassedValidateAndPrintedItsPassword: a base_url
// that does not parse was accepted (validate exited 0) and the run's error
// showed it with its password and query; it is a spec error now, shown
// with those redacted.
func TestUnparseableBaseURLPassedValidateAndPrintedItsPassword(t *testing.T) {
	env := func(name string) (string, bool) {
		switch name {
		case "GW_URL":
			return "https://bob:hunter2-pw@gw.example:80a/v1?key=q-secret-9", true
		case "GW_SLASH":
			return "https://bob:hunter2/pw@gw.example/v1", true
		}
		return "", false
	}
	tests := []struct {
		name, baseURL, want string
	}{
		{"a bad port", "https://bob:hunter2-pw@gw.example:80a/v1?key=q-secret-9",
			`job.yaml:6:13: task.base_url: "https://bob:[redacted]@gw.example:80a/v1?key=[redacted]" is not an absolute http(s) URL: invalid port ":80a" after host`},
		{"a slash in the password", "https://bob:hunter2/pw@gw.example:x/v1",
			`job.yaml:6:13: task.base_url: "https://bob:[redacted]@gw.example:x/v1" is not an absolute http(s) URL: it does not parse`},
		{"a space in the host", "https://gw example/v1?token=q-secret-9&v=2",
			`job.yaml:6:13: task.base_url: "https://gw example/v1?token=[redacted]&v=[redacted]" is not an absolute http(s) URL: invalid character " " in host name`},
		{"no scheme", "api.example.com/v1",
			`job.yaml:6:13: task.base_url: "api.example.com/v1" is not an absolute http(s) URL: it needs http:// or https://`},
		{"another scheme", "ftp://bob:hunter2-pw@gw.example/v1",
			`job.yaml:6:13: task.base_url: "ftp://bob:[redacted]@gw.example/v1" is not an absolute http(s) URL: it needs http:// or https://`},
		{"no host", "https:///v1",
			`job.yaml:6:13: task.base_url: "https:///v1" is not an absolute http(s) URL: it names no host`},
		{"from a variable whose password the parser quotes", "${GW_SLASH}",
			`job.yaml:6:13: task.base_url: "${GW_SLASH}" is not an absolute http(s) URL: it does not parse`},
		{"from a variable", "${GW_URL}",
			`job.yaml:6:13: task.base_url: "${GW_URL}" is not an absolute http(s) URL: invalid port ":80a" after host`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := llmTask + "  model: m\n  base_url: " + tt.baseURL + "\n"
			_, err := Parse("job.yaml", []byte(src), "/specs", env)
			if err == nil {
				t.Fatalf("Parse accepted base_url %q", tt.baseURL)
			}
			got := err.Error()
			for _, secret := range []string{"hunter2", "q-secret-9"} {
				if strings.Contains(got, secret) {
					t.Errorf("the error shows %q:\n%s", secret, got)
				}
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("Parse:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestAbsoluteHTTPBaseURLsAreAccepted: the check refuses only what no call
// could use.
func TestAbsoluteHTTPBaseURLsAreAccepted(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:8089/v1", "https://gw.example/v1?gwtoken=abc", "https://u:p@gw.example", "https://NAME.openai.azure.com"} {
		src := llmTask + "  model: m\n  base_url: " + u + "\n"
		if _, err := Parse("job.yaml", []byte(src), "/specs", nil); err != nil {
			t.Errorf("base_url %q: %v", u, err)
		}
	}
}

// TestRouteBaseURLsAreChecked: routes[i].base_url passes the same check as
// task.base_url.
func TestRouteBaseURLsAreChecked(t *testing.T) {
	src := llmTask + "  model: m\nroutes:\n  - {name: a, provider: mock, model: m}\n  - {name: b, provider: mock, model: m, base_url: \"https://x:pw-123456@h:bad/v1\"}\n"
	_, err := Parse("job.yaml", []byte(src), "/specs", nil)
	want := `routes[1].base_url: "https://x:[redacted]@h:bad/v1" is not an absolute http(s) URL`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "pw-123456") {
		t.Errorf("routes: %v\nwant a line with %s", err, want)
	}
}

// TestFixerBaseURLIsChecked: fixer.base_url passes the same check.
func TestFixerBaseURLIsChecked(t *testing.T) {
	src := "check: {argv: [x]}\nfixer: {type: llm, provider: openai, model: m, base_url: 'https://x:pw-123456@h:bad/v1'}\n"
	_, err := ParseFix("fix.yaml", []byte(src), "/specs", nil)
	want := `fixer.base_url: "https://x:[redacted]@h:bad/v1" is not an absolute http(s) URL`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "pw-123456") {
		t.Errorf("ParseFix: %v\nwant a line with %s", err, want)
	}
}
