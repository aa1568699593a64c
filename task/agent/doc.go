// Package agent runs an agent item: an llm task with tools, whose model
// answers with tool calls over many steps until it gives a final answer.
//
// Each step asks the Model once with the conversation so far; the tool
// calls of its answer run concurrently (bounded by Config.Parallel), each
// through its own runner (an exec or http task templated over the item's
// fields and the call's arguments, as .args), and their results go back to
// the model in the next step. Arguments that fail the tool's JSON Schema,
// an unknown tool and a run that fails are fed back to the model as the
// call's error result, not returned as the item's error; a run's own
// transient failure (exit 75, a 503) is first retried under Config.Retry.
// A step that feeds any error back counts toward MaxConsecutiveErrors,
// and a step whose calls all succeed resets the count.
//
// The loop lives inside one attempt of the task (task.Task): the engine
// sees one call whose usage and cost are every step's, and whose output
// is the final answer, validated and healed as any llm task's. Steps are
// not checkpointed: an attempt that is interrupted starts the
// conversation again (docs/agents.md).
package agent
