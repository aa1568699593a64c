// Package fixdemo is a tiny calculator with three bugs, for `tenax fix`.
package fixdemo

import "strings"

// Add returns a+b.
func Add(a, b int) int { return a - b }

// Max returns the larger of a and b.
func Max(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// Shout returns s in upper case with an exclamation mark.
func Shout(s string) string { return strings.ToLower(s) + "!" }
