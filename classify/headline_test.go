package classify

import "testing"

func TestHeadlinePicksTheLineThatSaysWhatWentWrong(t *testing.T) {
	tests := []struct{ name, stderr, want string }{
		{"blank", " \n\t\n", ""},
		{"one line", "permission denied\n", "permission denied"},
		{"last non-empty line", "reading a.go\nreview failed: 3 issues\n\n", "review failed: 3 issues"},
		{"python traceback", "Traceback (most recent call last):\n  File \"r.py\", line 3, in <module>\n    open(p)\nFileNotFoundError: [Errno 2] No such file or directory: 'a.go'\n",
			"FileNotFoundError: [Errno 2] No such file or directory: 'a.go'"},
		{"python exception with a multi-line message", "Traceback (most recent call last):\n  File \"r.py\", line 1, in <module>\nValueError: first line\nsecond line\n",
			"ValueError: first line"},
		{"chained python tracebacks", "Traceback (most recent call last):\n  File \"a\", line 1\nKeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"b\", line 2\nRuntimeError: lookup failed\n",
			"RuntimeError: lookup failed"},
		{"go panic", "panic: runtime error: index out of range [3] with length 2\n\ngoroutine 1 [running]:\nmain.main()\n\t/x/main.go:5 +0x1d\nexit status 2\n",
			"panic: runtime error: index out of range [3] with length 2"},
		{"crlf", "first\r\nlast\r\n", "last"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Headline(tt.stderr); got != tt.want {
				t.Errorf("Headline = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGenericExitCodeIsClassifiedByStderr(t *testing.T) {
	tests := []struct {
		name string
		err  *exitErr
		want Class
	}{
		{"connection reset", &exitErr{code: 1, stderr: "fetching…\nConnectionResetError: [Errno 104] Connection reset by peer\n"}, Retryable},
		{"a keyword among the last lines", &exitErr{code: 2, stderr: "curl: (7) Failed to connect: Connection refused\nreview aborted\n"}, Retryable},
		{"a keyword only far above is not read", &exitErr{code: 1, stderr: "timeout=30 configured\n1\n2\n3\n4\n5\nbad input\n"}, Item},
		{"no keyword", &exitErr{code: 1, stderr: "No such file or directory\n"}, Item},
		{"specific codes keep their meaning", &exitErr{code: 127, stderr: "connection reset"}, Fatal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := Classify(tt.err); d.Class != tt.want {
				t.Errorf("Classify = %v, want %v", d, tt.want)
			}
		})
	}
}
