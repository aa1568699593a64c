package cache

import "fmt"

// CheckKey returns nil for a key a cache accepts (what Key returns: 16
// to 1024 lowercase hex digits), else ErrBadKey wrapped: the rule every
// cache of tenax's applies, the one in the database (package
// cache/postgres) included.
func CheckKey(key string) error {
	if !validKey(key) {
		return fmt.Errorf("%w: %q", ErrBadKey, key)
	}
	return nil
}
