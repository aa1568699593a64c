package exec_test

import (
	"context"
	"fmt"
	"log"

	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/exec"
)

func Example() {
	echo, err := exec.New(exec.Config{
		Argv: []string{"echo", "reviewing", "{{.path}}", "for {{.owner | upper}}"},
	})
	if err != nil {
		log.Fatal(err)
	}
	item := task.Item{Idx: 0, Fields: map[string]any{"path": "main.go; rm -rf /", "owner": "ada"}}
	res, err := echo.Run(context.Background(), item)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(res.Output))
	// Output: "reviewing main.go; rm -rf / for ADA"
}
