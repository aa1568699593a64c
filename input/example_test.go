package input_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tenaxhq/tenax/input"
)

func Example() {
	src := strings.NewReader(`{"id": "u1", "word": "hola"}

[1, 2]
{"id": "u3", "word": "adiós"}
`)
	r := input.NewReader(src, "units.jsonl", input.JSONL)
	for {
		item, err := r.Next()
		if err == io.EOF {
			break
		}
		var bad *input.LineError
		if errors.As(err, &bad) {
			fmt.Printf("#%d bad: %v\n", item.Idx, err)
			continue
		}
		if err != nil {
			panic(err)
		}
		fmt.Printf("#%d %s %s\n", item.Idx, item.ID, item.Fields["word"])
	}
	// Output:
	// #0 u1 hola
	// #1 bad: units.jsonl:3: not a JSON object (got array)
	// #2 u3 adiós
}
