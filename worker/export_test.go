package worker

import "github.com/tenaxhq/tenax/task"

// WrapTask makes the engines of cfg's worker run each job's task through
// wrap, for tests that count what the engine asks of the task.
func WrapTask(cfg *Config, wrap func(task.Task) task.Task) { cfg.wrapTask = wrap }
