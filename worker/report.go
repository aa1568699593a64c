package worker

import (
	"fmt"
	"io"
	"time"
)

// Report prints on out, every interval, what w did since the last
// report: each job it took up, and its items finished and in flight while
// it works (an idle worker prints nothing); stop prints its total. A
// worker is a long-running process whose stderr is often a log, so these
// are lines, not a progress bar.
func (w *Worker) Report(out io.Writer, every time.Duration) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		if every <= 0 {
			<-done
			return
		}
		t := time.NewTicker(every)
		defer t.Stop()
		seen := map[string]bool{}
		var last int64
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			st := w.Status()
			for _, id := range st.Jobs {
				if !seen[id] {
					seen[id] = true
					fmt.Fprintf(out, "tenax: worker %s: working on job %s\n", w.ID(), id)
				}
			}
			if st.Finished == last && st.InFlight == 0 {
				continue
			}
			fmt.Fprintf(out, "tenax: worker %s: %d items finished (+%d in %s, %.1f/s), %d in flight\n",
				w.ID(), st.Finished, st.Finished-last, every, float64(st.Finished-last)/every.Seconds(), st.InFlight)
			last = st.Finished
		}
	}()
	return func() {
		close(done)
		<-exited
		fmt.Fprintf(out, "tenax: worker %s stopped: %d items finished\n", w.ID(), w.Finished())
	}
}
