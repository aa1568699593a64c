package breaker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/tenaxhq/tenax/breaker"
)

// Three failures in a row open the breaker; while open it turns calls
// away at once.
func Example() {
	b := breaker.New(breaker.Settings{
		Threshold:    3,
		ResetTimeout: 30 * time.Second,
		OnStateChange: func(from, to breaker.State, c breaker.Counts) {
			fmt.Printf("%s -> %s after %d consecutive failures\n", from, to, c.ConsecutiveFailures)
		},
	})
	for i := 1; i <= 4; i++ {
		p, err := b.Allow()
		if errors.Is(err, breaker.ErrOpen) {
			fmt.Printf("call %d: rejected, open until %v after opening\n", i, b.ReadyAt().Sub(b.OpenedAt()))
			continue
		}
		p.Failure() // the call failed
	}
	b.Reset() // an operator chose Continue
	fmt.Println("state:", b.State())
	// Output:
	// closed -> open after 3 consecutive failures
	// call 4: rejected, open until 30s after opening
	// open -> closed after 0 consecutive failures
	// state: closed
}
