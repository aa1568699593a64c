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
// is the final answer, validated and healed as any llm task's.
//
// Task.Durable makes the steps durable in a StepLog (a store's job): the
// model's answer is kept before its tools run, a start mark before each
// tool runs, each result as it comes. An attempt replays what its item's
// conversation recorded — after a provider error, or in a process
// resumed after kill -9 — and asks the model only for what follows, so no
// recorded answer is paid for twice. A tool that started with no result
// recorded runs again only if it is idempotent; otherwise the item fails
// with an *InterruptedToolError. Older steps' tool results are sent cut
// (Config.KeepWholeSteps, OldResultBytes), so the conversation grows by a
// bounded amount per step (docs/agents.md).
//
// A model whose provider keeps its answers (a StoringModel: OpenAI's
// stored chat completions, task.store) closes the last window, a kill
// between the provider's answer and its write: each call is sent tagged
// (Tags) after an ask mark, and a resumed item whose last ask has no
// answer reads the stored answer back instead of paying for it again.
package agent
