package batch

import (
	"errors"

	"github.com/tenaxhq/tenax/engine"
)

// Routes in batch mode (docs/routes.md, docs/batch.md): each item of a
// wave goes where an online call of it would go, chosen by the engine's
// own engine.Routes: the lowest tier whose breaker is not open, the
// spec's strategy within it, away from the routes it left and to one
// that fits what its fallbacks want (a larger context window, another
// provider, a stronger tier). After each answer engine.Routes.After moves
// it as online, and its next wave sends it there. A route's breaker
// opens when one of its waves trips it (a share of its requests failing
// with one error, breaker.Share) or when it refuses to create a batch;
// it stays open for the rest of the run, since a half-open probe would
// be a wave of its own, and the operator is asked only when no route is
// left. The online tail runs the engine over every route, the routes an
// item left (and why) carried in its tries.

// Route is one deployment a routed batch job may send its waves to: the
// route as the engine knows it (name, provider, model, tier, weight,
// context window, and its online task, whose estimates the choice uses)
// and its batch API.
type Route struct {
	engine.Route
	// Client is the route's batch API.
	Client Client
	// Codec builds the route's requests and reads its answers.
	Codec Codec
}

// routeAt is the index of the route named name; 0 (the first) for "" or
// a name the job no longer has.
func (r *Runner) routeAt(name string) int { return max(r.rs.Index(name), 0) }

// routed reports whether the job names its routes (Config.Routes).
func (r *Runner) routed() bool { return r.routes[0].Name != "" }

// choose picks the route of f's next request. An item no route fits
// gets the error that fails it; with every route it fits open (the run's
// breaker decides), it stays where it was.
func (r *Runner) choose(f *flight) error {
	_, err := r.rs.Choose(&f.ir, &f.item)
	if nr, ok := errors.AsType[*engine.NoRouteError](err); ok && nr.Open {
		if f.ir.Index() < 0 {
			r.rs.Put(&f.ir, 0)
		}
		return nil
	}
	return err
}
