package task_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tenaxhq/tenax/task"
)

// Example adapts a function to the Task interface: one attempt for one
// item, its output as JSON.
func Example() {
	upper := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
		out, err := json.Marshal(strings.ToUpper(it.Fields["text"].(string)))
		return task.Result{Output: out}, err
	})
	res, err := upper.Run(context.Background(), task.Item{Idx: 0, Fields: map[string]any{"text": "tenax"}})
	fmt.Println(string(res.Output), err)
	// Output: "TENAX" <nil>
}
