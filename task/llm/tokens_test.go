package llm

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/mock"
)

// TestEstimateTokensIsWithinTenPercent holds the estimate for models
// without a tokenizer to o200k_base's count of English and Chinese
// prompts: within 10% over each text, 15% over each prompt. Characters / 4
// counted the Chinese text at a third of its tokens.
func TestEstimateTokensIsWithinTenPercent(t *testing.T) {
	tk, err := loadEncoding("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	for _, lang := range []string{"english", "chinese"} {
		t.Run(lang, func(t *testing.T) {
			b, err := os.ReadFile("testdata/tokens/" + lang + ".txt")
			if err != nil {
				t.Fatal(err)
			}
			var real, est int
			for _, prompt := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				r, e := len(tk.EncodeOrdinary(prompt)), estimateTokens(prompt)
				if off := float64(e)/float64(r) - 1; off > 0.15 || off < -0.15 {
					t.Errorf("estimated %d tokens, o200k_base counts %d (%+.0f%%): %s", e, r, 100*off, prompt)
				}
				real += r
				est += e
			}
			if off := float64(est)/float64(real) - 1; off > 0.10 || off < -0.10 {
				t.Errorf("estimated %d tokens over the text, o200k_base counts %d (%+.0f%%)", est, real, 100*off)
			}
		})
	}
}

func TestEncodingFor(t *testing.T) {
	for model, want := range map[string]string{
		"gpt-4o": "o200k_base", "gpt-4o-mini": "o200k_base", "gpt-4.1-nano": "o200k_base", "gpt-5": "o200k_base",
		"o3-mini": "o200k_base", "o1": "o200k_base", "gpt-4": "cl100k_base", "gpt-4-turbo": "cl100k_base",
		"gpt-3.5-turbo-0125": "cl100k_base", "claude-sonnet-4": "", "llama3": "", "o10": "", "gpt-40": "",
	} {
		if got := encodingFor(model); got != want {
			t.Errorf("encodingFor(%q) = %q, want %q", model, got, want)
		}
	}
}

// TestTokenEstimatesFollowTheReportedUsage pins the reconciliation: after
// calls whose usage the provider reported, a model without a tokenizer is
// estimated at what the provider bills. The mock bills a token per four
// characters; the estimate counts this prompt at about a token a word.
func TestTokenEstimatesFollowTheReportedUsage(t *testing.T) {
	tk := mustNew(t, Config{Provider: ProviderMock, Model: mock.ModelEcho, Prompt: "{{.p}}", MaxTokens: 4096})
	it := item(map[string]any{"p": strings.Repeat("abcdefghijklmnopqrstuvwxyz ", 40)})
	before := tk.EstimateTokens(it) - 4096
	res, err := tk.Run(context.Background(), it)
	if err != nil {
		t.Fatal(err)
	}
	reported := int(res.Usage.InputTokens)
	after := tk.EstimateTokens(it) - 4096
	if before == reported {
		t.Fatalf("the estimate already was the mock's count, %d: the test shows nothing", reported)
	}
	if after != reported {
		t.Errorf("estimated %d prompt tokens before the call, %d after; the provider reported %d", before, after, reported)
	}
}

// TestTokenScaleIsBounded keeps a provider that reports nonsense from
// scaling estimates without limit.
func TestTokenScaleIsBounded(t *testing.T) {
	for _, tc := range []struct {
		reported int64
		want     int
	}{{1, 50}, {100, 100}, {1_000_000, 400}} {
		var s tokenScale
		s.observe(100, tc.reported)
		s.observe(0, 5) // a call without a count says nothing
		if got := s.apply(100); got != tc.want {
			t.Errorf("reported %d for 100 counted: scaled 100 to %d, want %d", tc.reported, got, tc.want)
		}
	}
	var none tokenScale
	if got := none.apply(42); got != 42 {
		t.Errorf("with nothing reported, 42 scaled to %d", got)
	}
}

// BenchmarkCountTokens is what counting a prompt costs each call: an
// English and a Chinese prompt of the test texts, with o200k_base and with
// the estimate.
func BenchmarkCountTokens(b *testing.B) {
	for _, lang := range []string{"english", "chinese"} {
		text, err := os.ReadFile("testdata/tokens/" + lang + ".txt")
		if err != nil {
			b.Fatal(err)
		}
		msgs := []Message{{Role: "user", Content: strings.SplitN(string(text), "\n", 3)[1]}}
		for _, c := range []struct {
			name string
			tc   tokenCounter
		}{{"o200k_base", tokenCounter{encoding: "o200k_base"}}, {"estimate", tokenCounter{}}} {
			c.tc.count(msgs) // loads the encoding
			b.Run(lang+"/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					c.tc.count(msgs)
				}
			})
		}
	}
}

// TestTheTokenizerRunsOnlyWhenAsked keeps tiktoken, ~0.15 ms per prompt,
// off the calls of a job whose estimates nothing reads.
func TestTheTokenizerRunsOnlyWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Provider: ProviderOpenAI, APIKey: "k", Model: "gpt-4o", Prompt: "p"}, ""},
		{Config{Provider: ProviderOpenAI, APIKey: "k", Model: "gpt-4o", Prompt: "p", ExactTokens: true}, "o200k_base"},
		{Config{Provider: ProviderOpenAI, APIKey: "k", Model: "gpt-4", Prompt: "p", ExactTokens: true}, "cl100k_base"},
		{Config{Provider: ProviderOpenAI, APIKey: "k", Model: "llama3", Prompt: "p", ExactTokens: true}, ""},
		{Config{Provider: ProviderAnthropic, APIKey: "k", Model: "gpt-4o", Prompt: "p", ExactTokens: true}, ""},
	} {
		if got := mustNew(t, tc.cfg).counter.encoding; got != tc.want {
			t.Errorf("%s %s exact=%v: counts with %q, want %q", tc.cfg.Provider, tc.cfg.Model, tc.cfg.ExactTokens, got, tc.want)
		}
	}
}

// TestTheEmbeddedEncodingsLoad reads each encoding encodingFor names from
// the gzipped copies in the binary, whole (tiktoken's rank counts), and
// refuses one that is not built in rather than downloading it.
func TestTheEmbeddedEncodingsLoad(t *testing.T) {
	for name, want := range map[string]int{"o200k_base": 199_998, "cl100k_base": 100_256} {
		ranks, err := embeddedBPE{}.LoadTiktokenBpe("https://example.invalid/encodings/" + name + ".tiktoken")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(ranks) != want {
			t.Errorf("%s: %d ranks, want %d", name, len(ranks), want)
		}
	}
	if _, err := (embeddedBPE{}).LoadTiktokenBpe("p50k_base.tiktoken"); err == nil {
		t.Error("p50k_base loaded; only o200k_base and cl100k_base are built in")
	}
}
