package batch_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/tenaxhq/tenax/batch"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/task/llm"
	"github.com/tenaxhq/tenax/validate"
)

// Ten items through Anthropic's Message Batches API, served in-process by
// the mock: the unusable answers are re-asked in a second wave, and the
// answers cost half the online price.
func Example() {
	{
		srv := mock.New(mock.Config{Seed: 3, Faults: mock.Faults{InvalidOutput: 0.2}})
		t, _ := llm.New(llm.Config{Provider: "anthropic", BaseURL: "http://mock.invalid/", APIKey: "k", HTTPClient: srv.Client(),
			Model: mock.ModelJSON, Prompt: "{{.word}}", Output: llm.OutputJSON,
			Prices: map[string]llm.Price{mock.ModelJSON: {InputPerMTok: 3, OutputPerMTok: 15}}})
		home, _ := os.MkdirTemp("", "batch-example")
		defer os.RemoveAll(home)
		j, _ := (&jsonl.Store{Home: home}).Create(context.Background(), store.Manifest{Created: time.Now(), Items: 10})
		defer j.Close()
		ledger, _ := batch.OpenFileLedger(j.(*jsonl.Job).Dir())
		defer ledger.Close()

		// Good answers are {"text": ..., "length": ...}.
		v, _ := validate.JSONSchema([]byte(`{"type": "object", "required": ["text", "length"]}`), "schema.json")
		r := batch.New(batch.Config{
			Validator: v,
			Client:    batch.NewAnthropic("anthropic", "http://mock.invalid/", "k", srv.Client(), batch.Limits{}),
			Codec:     t.Batch(), Ledger: ledger, PollMin: time.Minute,
		})
		sum, err := r.Run(context.Background(), batch.Input{
			Open:  func() (batch.Source, error) { return &sliceSource{n: 10}, nil },
			Want:  func(int) bool { return true },
			Job:   j,
			JobID: j.Manifest().ID,
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%d succeeded in %d waves, %d requests\n", sum.Succeeded, sum.Waves, sum.Requests)
		fmt.Printf("saved %.0f%%\n", 100*(1-sum.BatchCostUSD/sum.FullCostUSD))
	}
	// Output:
	// 10 succeeded in 2 waves, 11 requests
	// saved 50%
}
