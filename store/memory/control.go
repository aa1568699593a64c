package memory

import (
	"context"

	"github.com/tenaxhq/tenax/store"
)

var _ store.Controls = (*Store)(nil)

// AppendControl keeps req in the job's control log.
func (s *Store) AppendControl(ctx context.Context, id string, req store.ControlRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := req.Check(); err != nil {
		return err
	}
	d, err := s.get(id)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.controls = append(d.controls, req)
	d.mu.Unlock()
	return nil
}

// Controls returns the job's requests from the after'th on; after is a
// count of requests.
func (s *Store) Controls(_ context.Context, id string, after int64) ([]store.ControlRequest, int64, error) {
	d, err := s.get(id)
	if err != nil {
		return nil, after, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	n := int64(len(d.controls))
	if after >= n {
		return nil, n, nil
	}
	after = max(after, 0)
	return append([]store.ControlRequest(nil), d.controls[after:]...), n, nil
}

// ControlLocation is "memory".
func (s *Store) ControlLocation() string { return "memory" }
