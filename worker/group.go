package worker

import (
	"context"
	"sync"
)

// RunAll runs the workers side by side until ctx ends or one of them
// fails: the first failure cancels the others' context, so that the
// process stops as a whole rather than limping on with fewer workers, and
// it is returned once all have stopped.
func RunAll(ctx context.Context, ws []*Worker) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for _, w := range ws {
		wg.Go(func() {
			if err := w.Run(ctx); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				cancel()
			}
		})
	}
	wg.Wait()
	return first
}
