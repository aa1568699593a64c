// Package funclen holds a test over tenax's own source: no function runs
// 80 lines or more unless it is listed with the reason it stays long. A
// long function is usually a design waiting to be named (a table, a state
// function, a small type); the list keeps the exceptions few and says why.
package funclen
