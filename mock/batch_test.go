package mock_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/tenaxhq/tenax/mock"
)

func openAIClient(srv *mock.Server) openai.Client {
	return openai.NewClient(ooption.WithBaseURL("http://mock.invalid/v1/"), ooption.WithAPIKey("k"),
		ooption.WithHTTPClient(srv.Client()), ooption.WithMaxRetries(0))
}

func anthropicClient(srv *mock.Server) anthropic.Client {
	return anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL("http://mock.invalid/"),
		aoption.WithAPIKey("k"), aoption.WithHTTPClient(srv.Client()), aoption.WithMaxRetries(0))
}

// openAIBatchFile is n chat requests as an OpenAI batch input file.
func openAIBatchFile(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"custom_id":"i%d","method":"POST","url":"/v1/chat/completions","body":{"model":"mock-json","messages":[{"role":"user","content":"item %d"}]}}`+"\n", i, i)
	}
	return b.String()
}

// lines reads a JSONL body into custom_id → line.
func lines(t *testing.T, r io.Reader) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("a result line is not JSON: %v: %s", err, sc.Text())
		}
		out[m["custom_id"].(string)] = m
	}
	return out
}

func TestOpenAIBatchProcessesOverTimeAndSplitsOutputAndErrorFiles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mock.New(mock.Config{Seed: 3, Faults: mock.Faults{Server: 0.2, InvalidOutput: 0.2},
			Batch: mock.BatchConfig{ProcessingTime: time.Hour}})
		c := openAIClient(srv)
		ctx := context.Background()
		f, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader(openAIBatchFile(100)), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Minute)
		mid, err := c.Batches.Get(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if mid.Status != openai.BatchStatusInProgress || mid.RequestCounts.Completed+mid.RequestCounts.Failed != 50 {
			t.Fatalf("half way through: status %s, %d completed + %d failed; want in_progress with 50 done", mid.Status, mid.RequestCounts.Completed, mid.RequestCounts.Failed)
		}
		time.Sleep(31 * time.Minute)
		end, err := c.Batches.Get(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if end.Status != openai.BatchStatusCompleted || end.RequestCounts.Total != 100 {
			t.Fatalf("after the processing time: status %s, total %d; want completed, 100", end.Status, end.RequestCounts.Total)
		}
		out, err := c.Files.Content(ctx, end.OutputFileID)
		if err != nil {
			t.Fatal(err)
		}
		good := lines(t, out.Body)
		errs, err := c.Files.Content(ctx, end.ErrorFileID)
		if err != nil {
			t.Fatal(err)
		}
		bad := lines(t, errs.Body)
		if len(good) != int(end.RequestCounts.Completed) || len(bad) != int(end.RequestCounts.Failed) || len(good)+len(bad) != 100 {
			t.Fatalf("files hold %d good and %d errored lines; counts say %d and %d", len(good), len(bad), end.RequestCounts.Completed, end.RequestCounts.Failed)
		}
		if len(bad) < 5 || len(bad) > 40 {
			t.Errorf("%d of 100 errored with a 20%% server fault rate", len(bad))
		}
		for id, l := range bad {
			resp := l["response"].(map[string]any)
			if resp["status_code"].(float64) != 500 {
				t.Errorf("%s: errored line has status %v, want 500", id, resp["status_code"])
			}
		}
		if s := srv.BatchStats(); s.Submissions != 1 || s.Requests != 100 || s.Uploads != 1 {
			t.Errorf("stats %+v, want 1 upload, 1 submission of 100 requests", s)
		}
	})
}

func TestOpenAIBatchThatOutlivesItsWindowExpiresTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mock.New(mock.Config{Batch: mock.BatchConfig{ProcessingTime: time.Minute, ExpireFirst: 1}})
		c := openAIClient(srv)
		ctx := context.Background()
		var ids []string
		for range 2 {
			f, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader(openAIBatchFile(10)), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
			if err != nil {
				t.Fatal(err)
			}
			b, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, b.ID)
		}
		time.Sleep(25 * time.Hour)
		first, _ := c.Batches.Get(ctx, ids[0])
		second, _ := c.Batches.Get(ctx, ids[1])
		if first.Status != openai.BatchStatusExpired || second.Status != openai.BatchStatusCompleted {
			t.Fatalf("statuses %s and %s; want the first batch expired, the second completed", first.Status, second.Status)
		}
		errs, err := c.Files.Content(ctx, first.ErrorFileID)
		if err != nil {
			t.Fatal(err)
		}
		expired := 0
		for _, l := range lines(t, errs.Body) {
			if e, ok := l["error"].(map[string]any); ok && e["code"] == "batch_expired" {
				expired++
			}
		}
		if expired != 5 {
			t.Errorf("%d requests expired; want the 5 not processed within the window", expired)
		}
	})
}

func TestAnthropicBatchResultsCarrySucceededErroredAndCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mock.New(mock.Config{Seed: 1, Faults: mock.Faults{Overloaded: 0.3}, Batch: mock.BatchConfig{ProcessingTime: time.Hour}})
		c := anthropicClient(srv)
		ctx := context.Background()
		var reqs []anthropic.MessageBatchNewParamsRequest
		for i := range 20 {
			reqs = append(reqs, anthropic.MessageBatchNewParamsRequest{CustomID: fmt.Sprintf("i%d", i), Params: anthropic.MessageBatchNewParamsRequestParams{
				Model: "mock-echo", MaxTokens: 100, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(fmt.Sprintf("item %d", i)))},
			}})
		}
		b, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: reqs})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Minute)
		if _, err := c.Messages.Batches.Cancel(ctx, b.ID, anthropic.MessageBatchCancelParams{}); err != nil {
			t.Fatal(err)
		}
		got, err := c.Messages.Batches.Get(ctx, b.ID, anthropic.MessageBatchGetParams{})
		if err != nil {
			t.Fatal(err)
		}
		rc := got.RequestCounts
		if got.ProcessingStatus != anthropic.MessageBatchProcessingStatusEnded || rc.Canceled != 10 || rc.Succeeded+rc.Errored != 10 {
			t.Fatalf("after a cancel half way: %s %+v; want ended, 10 canceled, 10 done", got.ProcessingStatus, rc)
		}
		stream := c.Messages.Batches.ResultsStreaming(ctx, b.ID, anthropic.MessageBatchResultsParams{})
		kinds := map[string]int{}
		for stream.Next() {
			r := stream.Current()
			kinds[r.Result.Type]++
			switch r.Result.Type {
			case "succeeded":
				if r.Result.Message.Content[0].Text != "item "+strings.TrimPrefix(r.CustomID, "i") {
					t.Errorf("%s answered %q", r.CustomID, r.Result.Message.Content[0].Text)
				}
			case "errored":
				if r.Result.Error.Error.Type != "api_error" {
					t.Errorf("%s errored with %q, want api_error", r.CustomID, r.Result.Error.Error.Type)
				}
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if kinds["canceled"] != 10 || kinds["succeeded"] != int(rc.Succeeded) || kinds["errored"] != int(rc.Errored) {
			t.Errorf("results %v disagree with counts %+v", kinds, rc)
		}
	})
}

func TestBatchRefusesDuplicateCustomIDsAndOversizedBatches(t *testing.T) {
	srv := mock.New(mock.Config{Batch: mock.BatchConfig{MaxRequests: 3}})
	c := anthropicClient(srv)
	req := func(id string) anthropic.MessageBatchNewParamsRequest {
		return anthropic.MessageBatchNewParamsRequest{CustomID: id, Params: anthropic.MessageBatchNewParamsRequestParams{
			Model: "mock-echo", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))}}}
	}
	for name, reqs := range map[string][]anthropic.MessageBatchNewParamsRequest{
		"duplicate": {req("a"), req("a")},
		"too many":  {req("a"), req("b"), req("c"), req("d")},
		"bad id":    {req("a b")},
	} {
		if _, err := c.Messages.Batches.New(context.Background(), anthropic.MessageBatchNewParams{Requests: reqs}); err == nil || !strings.Contains(err.Error(), "400") {
			t.Errorf("%s: err = %v, want a 400", name, err)
		}
	}
	if s := srv.BatchStats(); s.Submissions != 0 {
		t.Errorf("%d submissions counted for refused batches", s.Submissions)
	}
}

// The batch APIs answered every request in text, whatever its tools: an
// Anthropic job whose schema is a forced tool got text where the online
// call gets a tool_use block.
func TestBatchedRequestIsAnsweredAsTheChatEndpointAnswersIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mock.New(mock.Config{})
		c := anthropicClient(srv)
		ctx := context.Background()
		tool := anthropic.ToolParam{Name: "output", InputSchema: anthropic.ToolInputSchemaParam{Required: []string{"text", "length"}}}
		b, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{{
			CustomID: "i0", Params: anthropic.MessageBatchNewParamsRequestParams{
				Model: "mock-json", MaxTokens: 100,
				Messages:   []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("gato"))},
				Tools:      []anthropic.ToolUnionParam{{OfTool: &tool}},
				ToolChoice: anthropic.ToolChoiceParamOfTool("output"),
			},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		stream := c.Messages.Batches.ResultsStreaming(ctx, b.ID, anthropic.MessageBatchResultsParams{})
		n := 0
		for stream.Next() {
			n++
			r := stream.Current()
			if r.Result.Type != "succeeded" {
				t.Fatalf("%s: %s", r.CustomID, r.Result.Type)
			}
			m := r.Result.Message
			if m.StopReason != anthropic.StopReasonToolUse || len(m.Content) != 1 || m.Content[0].Type != "tool_use" {
				t.Fatalf("stop %q, content %+v: want one tool_use block, as the online call gets", m.StopReason, m.Content)
			}
			if got, want := string(m.Content[0].Input), `{"length":4,"text":"gato"}`; got != want {
				t.Errorf("tool input %s, want %s", got, want)
			}
		}
		if err := stream.Err(); err != nil || n != 1 {
			t.Fatalf("%d results, %v", n, err)
		}
	})
}

func TestBatchListPagesNewestFirstWithMetadata(t *testing.T) {
	srv := mock.New(mock.Config{})
	c := openAIClient(srv)
	ctx := context.Background()
	for i := range 25 {
		f, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader(openAIBatchFile(1)), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
			CompletionWindow: openai.BatchNewParamsCompletionWindow24h, Metadata: map[string]string{"n": fmt.Sprint(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := c.Batches.List(ctx, openai.BatchListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 20 || !page.HasMore || page.Data[0].Metadata["n"] != "24" {
		t.Fatalf("first page: %d batches, has_more %v, newest n=%s; want the default 20, more, the newest first", len(page.Data), page.HasMore, page.Data[0].Metadata["n"])
	}
	var seen []string
	pages := c.Batches.ListAutoPaging(ctx, openai.BatchListParams{Limit: openai.Int(7)})
	for pages.Next() {
		seen = append(seen, pages.Current().Metadata["n"])
	}
	if err := pages.Err(); err != nil || len(seen) != 25 || seen[0] != "24" || seen[24] != "0" {
		t.Errorf("paging by 7: %v (%v); want all 25, newest first, each once", seen, err)
	}
	if _, err := c.Batches.List(ctx, openai.BatchListParams{Limit: openai.Int(101)}); err == nil {
		t.Error("a limit of 101 was taken; OpenAI allows 1 to 100")
	}
}
