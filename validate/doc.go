// Package validate checks the output of one attempt before tenax accepts
// it. A Validator answers one question about an output: is it usable? When
// it is not, Validate returns an *Error, and the engine records the attempt
// as class invalid: the call worked, the answer is wrong, so the heal loop
// asks again with the error as feedback instead of retrying blindly.
//
// Three validators cover what a job spec can ask for:
//
//   - JSONSchema checks the output against a JSON Schema (any draft the
//     schema declares, 2020-12 by default). Its error lists each failing
//     location and why, such as "at '/items/0/price': got string, want
//     number", which is what a model needs to fix its answer.
//   - Regex requires the output text to match a pattern.
//   - Command runs a program with the output on its stdin: a non-zero exit
//     means invalid and its stderr is the error. This is how a generated
//     script is executed and checked: argv ["python3", "-"] runs the
//     model's Python answer.
//
// All chains validators; the first error wins.
//
// # What an output is
//
// An output is a record's JSON "output": a JSON string for text outputs,
// any JSON value for json outputs. Validators look at it as a user would:
// Regex and Command see the decoded text of a string output; of any other
// value Regex sees the compact JSON and Command the JSON as it is.
// JSONSchema validates a JSON value as it is; for a string output it
// validates the JSON the string holds, because an LLM task's text answer
// is usually a JSON document, often wrapped in a Markdown fence
// (```json … ```), which is stripped first. A string that holds no JSON is
// invalid with the message "output is not JSON: …", unless the schema
// accepts the string itself (a schema of type "string").
//
// # Which errors mean invalid
//
// Only an *Error means the output is bad. Its caller should record it as
// class invalid directly, not through the classifier, whose keyword rules
// could read "timed out" in a message as a transient fault. Any other
// error from Validate is not the output's fault and must not reach the
// heal loop: a validator command that cannot start is marked
// classify.Fatal (the setup is wrong, every item would fail the same way),
// and a canceled context comes back wrapped, as itself.
package validate
