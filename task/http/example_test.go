package http_test

import (
	"context"
	"fmt"
	"io"
	"log"
	nethttp "net/http"
	"net/http/httptest"

	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/http"
)

func Example() {
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, `{"path": %q, "got": %s}`, r.URL.Path, body)
	}))
	defer srv.Close()

	review, err := http.New(http.Config{
		URL:    srv.URL + "/reviews/{{.id}}",
		Body:   `{"file": {{json .path}}}`,
		Output: http.OutputJSON,
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := review.Run(context.Background(), task.Item{ID: "r1", Fields: map[string]any{"path": "main.go"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(res.Output))
	// Output: {"path":"/reviews/r1","got":{"file":"main.go"}}
}
