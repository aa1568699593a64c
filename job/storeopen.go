package job

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/store/postgres"
)

// OpenStore opens the store loc names: the JSONL store whose jobs live in
// loc.Dir/jobs, or PostgreSQL (its tables created when absent). The
// returned function releases the store's connections. A store that cannot
// be opened is a *store.OpenError.
func OpenStore(ctx context.Context, loc store.Location) (store.Store, func(), error) {
	if loc.PostgresURL != "" {
		pg, err := postgres.Open(ctx, loc.PostgresURL)
		if err != nil {
			return nil, nil, &store.OpenError{Location: loc, Err: err}
		}
		return pg, pg.Close, nil
	}
	return &jsonl.Store{Home: loc.Dir}, func() {}, nil
}

// DescribeStore says where a store keeps its jobs, for messages: the jobs
// directory of a JSONL store, the database of a PostgreSQL store.
func DescribeStore(st store.Store) string {
	switch s := st.(type) {
	case *jsonl.Store:
		return filepath.Join(s.Home, "jobs")
	case fmt.Stringer:
		return s.String()
	}
	return fmt.Sprintf("the %T store", st)
}
