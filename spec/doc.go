// Package spec loads a tenax job spec: the YAML file that says what to run
// over which input, and with which retry, breaker, heal, scheduling and
// checkpoint settings (DESIGN.md, "Job spec").
//
// Load does everything before the first call is made, so that a bad spec
// fails at once rather than halfway through a batch:
//
//  1. The YAML is parsed into a syntax tree, keeping every key's and
//     value's line and column.
//  2. The tree is decoded strictly into Spec. An unknown key is an error
//     with the nearest valid key as a suggestion
//     (`job.yaml:4:3: unknown key "modle" in task (did you mean "model"?)`),
//     and so is a value of the wrong type.
//  3. ${VAR} in any scalar value is replaced by the environment's value
//     (${VAR:-default} when unset or empty; $$ is a literal $). Expansion
//     happens inside values after parsing, so a variable can never change
//     the structure of the spec. A missing variable is an error at its
//     position.
//  4. Defaults are applied to every key the file did not write (an
//     explicit 0 or false is kept), values are validated (enumerations with
//     suggestions, ranges, regexes compiled, classification rules built),
//     and relative paths are resolved against the spec file's directory.
//
// Every problem is returned at once as Errors, each an *Error with
// file:line:col. Decoding problems (syntax, unknown keys, types, missing
// variables) are reported together; validation, which needs a decoded
// spec, runs only when there are none, so that a misspelled key does not
// also show up as a missing one.
//
// Values that came from the environment into api_key, headers or env, or
// from variables named like secrets (KEY, TOKEN, SECRET, PASSWORD), are the
// spec's Secrets: Redacted and RedactedYAML show the resolved spec with
// them replaced by "[redacted]", for manifest.json and `tenax validate`.
package spec
