package console

import (
	"io"
	"sync"
)

// Screen is a terminal's error stream shared by a live status line (the
// progress), log lines and prompts. Text written to it appears above the
// status line, which is erased before the text and drawn again under it, so
// a log line never lands on the bar and the bar never wraps into a log line.
//
// A Screen that is not live (output to a file or a pipe) passes text
// through and never draws a status line. Its methods are safe for
// concurrent use: a log handler and the progress goroutine share it.
type Screen struct {
	mu      sync.Mutex
	out     io.Writer
	live    bool
	status  string // the line kept at the bottom; "" for none
	drawn   bool   // status is on the terminal now
	midLine bool   // the last text written did not end its line
	buf     []byte
}

// NewScreen returns a Screen writing to out. live says out is a terminal
// on which the status line can be redrawn in place.
func NewScreen(out io.Writer, live bool) *Screen {
	return &Screen{out: out, live: live}
}

// Live reports whether the screen redraws a status line in place.
func (s *Screen) Live() bool { return s.live }

// eraseLine returns the cursor to column 0 and clears the line.
const eraseLine = "\r\033[K"

// Write prints p above the status line. While a write leaves a line
// unfinished (a prompt waiting on its answer), the status line is not drawn
// again.
func (s *Screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.live {
		return s.out.Write(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	buf := s.buf[:0]
	if s.drawn {
		buf = append(buf, eraseLine...)
		s.drawn = false
	}
	buf = append(buf, p...)
	s.midLine = p[len(p)-1] != '\n'
	if !s.midLine && s.status != "" {
		buf = append(buf, s.status...)
		s.drawn = true
	}
	s.buf = buf
	if _, err := s.out.Write(buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// SetStatus replaces the status line. It must fit the terminal's width
// (see Fit): a line that wraps cannot be redrawn in place.
func (s *Screen) SetStatus(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.live {
		return
	}
	s.status = line
	if s.midLine {
		return
	}
	s.buf = append(append(append(s.buf[:0], eraseLine...), line...), "\033[K"...)
	_, _ = s.out.Write(s.buf)
	s.drawn = true
}

// ClearStatus erases the status line and stops drawing it until the next
// SetStatus: a prompt is about to be shown.
func (s *Screen) ClearStatus() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = ""
	if s.drawn {
		_, _ = io.WriteString(s.out, eraseLine)
		s.drawn = false
	}
}

// EndStatus leaves the status line on the terminal as the run's last word
// and moves below it, so what follows starts on a line of its own.
func (s *Screen) EndStatus() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = ""
	if s.drawn {
		_, _ = io.WriteString(s.out, "\n")
		s.drawn = false
	}
}

// AtLineStart tells the screen the cursor is back at the start of a line
// although nothing it wrote put it there: the operator answered a prompt
// and the terminal echoed their Enter.
func (s *Screen) AtLineStart() {
	s.mu.Lock()
	s.midLine = false
	s.mu.Unlock()
}
