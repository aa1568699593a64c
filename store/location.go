package store

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Location says where a store lives, as `--store` and TENAX_STORE name it:
// a directory for the JSONL store (its jobs in Dir/jobs, as --home keeps
// them) or a PostgreSQL URL. Exactly one field is set.
type Location struct {
	// Dir is the JSONL store's home directory.
	Dir string
	// PostgresURL is a postgres:// or postgresql:// connection URL.
	PostgresURL string
}

// ParseLocation reads a store location: "postgres://…" or
// "postgresql://…" is PostgreSQL, "file://DIR" and any text without a
// scheme is a directory. Another scheme, or an empty string, is an error
// that says what is accepted. Of a URL it checks the scheme and the host
// only: the rest (sslmode, the port…) is pgx's to read, and
// store/postgres.ParseConfig reads it as the store will connect.
func ParseLocation(s string) (Location, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Location{}, errors.New("store: empty store location (want a directory or a postgres:// URL)")
	}
	scheme, rest, hasScheme := strings.Cut(s, "://")
	if !hasScheme || strings.ContainsAny(scheme, `/\.`) {
		return Location{Dir: s}, nil
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		u, err := url.Parse(s)
		if err != nil {
			return Location{}, fmt.Errorf("store: %s: %w", Location{PostgresURL: s}, errors.Unwrap(err))
		}
		if u.Host == "" && u.Query().Get("host") == "" {
			return Location{}, fmt.Errorf("store: %s names no host (want postgres://user@host:5432/db)", Location{PostgresURL: s})
		}
		return Location{PostgresURL: s}, nil
	case "file":
		if rest == "" {
			return Location{}, errors.New("store: file:// names no directory")
		}
		return Location{Dir: rest}, nil
	}
	return Location{}, fmt.Errorf("store: unknown store scheme %q in %q (want a directory or a postgres:// URL)", scheme, Location{PostgresURL: s})
}

// String is the location with any password hidden, for messages and for
// the resume command tenax prints.
func (l Location) String() string {
	if l.PostgresURL == "" {
		return l.Dir
	}
	u, err := url.Parse(l.PostgresURL)
	if err != nil {
		// Too broken to parse: show the scheme only, as it may hold a
		// password.
		scheme, _, _ := strings.Cut(l.PostgresURL, "://")
		return scheme + "://…"
	}
	// A password may also be a query parameter (libpq's password= and
	// sslpassword=): url.Redacted hides only the userinfo's.
	q := u.Query()
	hidden := false
	for k := range q {
		if strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword") {
			q.Set(k, "xxxxx")
			hidden = true
		}
	}
	if hidden {
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// OpenError is a store that could not be opened: its database refused or
// unreachable, its tables not made. It is tenax's own storage failing,
// whichever command met it (exit 4, docs/records.md), and says which store,
// its password hidden.
type OpenError struct {
	Location Location
	Err      error
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("opening the store %s: %v", e.Location, e.Err)
}

// Unwrap returns the cause.
func (e *OpenError) Unwrap() error { return e.Err }
