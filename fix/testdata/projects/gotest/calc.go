// Package calc is a deliberately broken calculator: its tests fail.
package calc

// Add returns a+b (wrongly).
func Add(a, b int) int { return a - b }

// Div returns a/b.
func Div(a, b int) int { return a / b }

// Greet greets name.
func Greet(name string) string { return "Hello " + name }
