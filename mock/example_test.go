package mock_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/tenaxhq/tenax/mock"
)

// A mock provider served in-process: the client's requests never touch a
// socket. With Seed 7, half the requests meeting a 500 means the first
// and the third.
func Example() {
	srv := mock.New(mock.Config{Seed: 7, Faults: mock.Faults{Server: 0.5}})
	client := srv.Client()
	for range 3 {
		req, _ := http.NewRequest("POST", "http://mock.invalid/v1/chat/completions", strings.NewReader(
			`{"model": "mock-json", "messages": [{"role": "user", "content": "hola"}]}`))
		req.Header.Set("Authorization", "Bearer mock-key")
		resp, err := client.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var out struct {
			Choices []struct{ Message struct{ Content string } }
			Error   struct{ Type string }
		}
		_ = json.Unmarshal(body, &out)
		if resp.StatusCode != http.StatusOK {
			fmt.Println(resp.StatusCode, out.Error.Type)
			continue
		}
		fmt.Println(resp.StatusCode, out.Choices[0].Message.Content)
	}
	fmt.Printf("%+v\n", srv.Stats())
	// Output:
	// 500 server_error
	// 200 {"text":"hola","length":4}
	// 500 server_error
	// {Requests:3 Succeeded:1 RateLimited:0 ServerErrors:2 Overloaded:0 Timeouts:0 Resets:0 Malformed:0 InvalidOutputs:0 AuthErrors:0 BadRequests:0 BillingErrors:0 Forbidden:0 TooLarge:0 ContextLength:0 ContentFiltered:0 Refusals:0 Truncated:0}
}

// Config.LogRequests sees every request and answer, with the API key
// redacted: here a streamed answer.
func ExampleConfig_logRequests() {
	var log strings.Builder
	srv := mock.New(mock.Config{LogRequests: &log})
	req, _ := http.NewRequest("POST", "http://mock.invalid/v1/chat/completions", strings.NewReader(
		`{"model": "mock-echo", "stream": true, "messages": [{"role": "user", "content": "hola"}]}`))
	req.Header.Set("Authorization", "Bearer sk-secret")
	resp, err := srv.Client().Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	var line struct {
		Path          string
		Status        int
		RequestHeader http.Header `json:"request_header"`
		ResponseText  string      `json:"response_text"`
	}
	_ = json.Unmarshal([]byte(log.String()), &line)
	fmt.Println(line.Path, line.Status, line.RequestHeader.Get("Authorization"))
	fmt.Println(strings.HasSuffix(line.ResponseText, "data: [DONE]\n\n"))
	// Output:
	// /v1/chat/completions 200 REDACTED
	// true
}
