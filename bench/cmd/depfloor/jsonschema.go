//go:build !nojsonschema

package main

// The validator compiles its meta-schemas in its package initialiser; the tag
// nojsonschema leaves it out to measure that alone.
import _ "github.com/santhosh-tekuri/jsonschema/v6"
