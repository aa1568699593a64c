package llm

import (
	"bufio"
	"compress/gzip"
	"embed"
	"encoding/base64"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
)

// The token counts a call's estimate starts from. With Config.ExactTokens,
// OpenAI's chat models are counted with their own byte-pair encoding
// (tiktoken's o200k_base or cl100k_base, embedded in the binary: nothing
// is downloaded); otherwise, and for every other model, with
// estimateTokens, a count by kinds of characters measured against
// o200k_base (docs/decisions.md, "Token estimates").

// OpenAI frames each message of a chat with tokens of its own, and primes
// the answer with more: what a chat's prompt_tokens adds to its messages'
// text.
const (
	tokensPerMessage = 3
	tokensPerReply   = 3
)

// encodingFor names the tiktoken encoding of an OpenAI model, "" for a
// model it does not know.
func encodingFor(model string) string {
	for _, p := range []string{"gpt-5", "gpt-4o", "gpt-4.1", "gpt-4.5", "chatgpt-4o", "o1", "o3", "o4"} {
		if model == p || strings.HasPrefix(model, p+"-") {
			return tiktoken.MODEL_O200K_BASE
		}
	}
	for _, p := range []string{"gpt-4", "gpt-3.5-turbo"} {
		if model == p || strings.HasPrefix(model, p+"-") {
			return tiktoken.MODEL_CL100K_BASE
		}
	}
	return ""
}

// encodings loads each tiktoken encoding once, on first use: parsing
// o200k_base's 200,000 ranks takes a noticeable fraction of a second and
// tens of megabytes, which a job that never counts OpenAI tokens, and a
// command that makes no call, should not pay.
var encodings = struct {
	sync.Mutex
	loaded map[string]*encoding
}{loaded: map[string]*encoding{}}

// encoding is one tiktoken encoding, loaded once.
type encoding struct {
	once sync.Once
	tk   *tiktoken.Tiktoken
	err  error
}

// loadEncoding returns the encoding named name, loading it on first use.
func loadEncoding(name string) (*tiktoken.Tiktoken, error) {
	encodings.Lock()
	e := encodings.loaded[name]
	if e == nil {
		e = &encoding{}
		encodings.loaded[name] = e
	}
	encodings.Unlock()
	e.once.Do(func() {
		// tiktoken-go downloads encodings unless told otherwise;
		// embeddedBPE reads the copies embedded in the binary.
		tiktoken.SetBpeLoader(embeddedBPE{})
		e.tk, e.err = tiktoken.GetEncoding(name)
	})
	return e.tk, e.err
}

// encodingFiles are the byte-pair encodings encodingFor names, gzipped:
// only these two, compressed, which keeps 4.5 MB out of the binary that
// tiktoken-go-loader's four uncompressed files took (encodings/README.md).
//
//go:embed encodings/*.tiktoken.gz
var encodingFiles embed.FS

// embeddedBPE is tiktoken-go's loader of an encoding's ranks, reading
// encodingFiles instead of the network.
type embeddedBPE struct{}

// LoadTiktokenBpe returns the ranks of the encoding whose file tiktoken
// would download from url: a token in base64 and its rank on each line.
func (embeddedBPE) LoadTiktokenBpe(url string) (map[string]int, error) {
	name := path.Base(url)
	f, err := encodingFiles.Open("encodings/" + name + ".gz")
	if err != nil {
		return nil, fmt.Errorf("tokenizer: encoding %s is not built in: %w", name, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", name, err)
	}
	ranks := make(map[string]int, 200_000)
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		tok, rank, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(tok)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", name, err)
		}
		n, err := strconv.Atoi(rank)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", name, err)
		}
		ranks[string(b)] = n
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", name, err)
	}
	return ranks, nil
}

// tokenCounter counts the prompt tokens of a conversation for one model.
type tokenCounter struct {
	encoding string // a tiktoken encoding, "" to estimate
}

func newTokenCounter(wire, model string, exact bool) tokenCounter {
	if wire != ProviderOpenAI || !exact {
		return tokenCounter{}
	}
	return tokenCounter{encoding: encodingFor(model)}
}

// count is the prompt tokens of msgs: exact for an OpenAI model tiktoken
// knows (framing included), estimated otherwise.
func (tc tokenCounter) count(msgs []Message) int {
	if tc.encoding != "" {
		if tk, err := loadEncoding(tc.encoding); err == nil {
			n := tokensPerReply
			for _, m := range msgs {
				n += tokensPerMessage + len(tk.EncodeOrdinary(m.Role)) + len(tk.EncodeOrdinary(m.Content))
			}
			return n
		}
	}
	n := tokensPerReply
	for _, m := range msgs {
		n += tokensPerMessage + 1 + estimateTokens(m.Content)
	}
	return n
}

// estimateTokens estimates the tokens of s in a modern byte-pair encoding
// without one: a run of letters or digits costs a token per wordChars
// bytes of it (a common English word is one token), an ideograph, kana or
// hangul syllable cperCJK of a token, any other letter outside ASCII
// otherPer, and punctuation a token each, a space before a word joining
// that word. Measured against o200k_base on the English and Chinese texts
// in testdata/tokens, it is within 10% of the real count
// (TestEstimateTokensIsWithinTenPercent); characters / 4, the rule it
// replaces, counted Chinese at a third of its tokens.
func estimateTokens(s string) int {
	var tokens float64
	word := 0 // bytes of the ASCII word or number being read
	endWord := func() {
		if word > 0 {
			tokens += float64((word + wordChars - 1) / wordChars)
			word = 0
		}
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			word++
			continue
		case isCJK(r):
			endWord()
			tokens += perCJK
		case r == ' ' || r == '\t':
			endWord()
		case r == '\n' || r == '\r':
			endWord()
			tokens += 0.5
		case r < utf8.RuneSelf:
			endWord()
			tokens++
		case unicode.IsLetter(r):
			endWord()
			tokens += otherPer
		default:
			endWord()
			tokens++
		}
	}
	endWord()
	return int(tokens + 0.5)
}

// The weights of estimateTokens, fitted on testdata/tokens.
const (
	wordChars = 8
	perCJK    = 0.72
	otherPer  = 0.5
)

// isCJK reports whether r is a Chinese, Japanese or Korean character.
func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) ||
		unicode.Is(unicode.Hangul, r) || r >= 0x3000 && r <= 0x303f || r >= 0xff00 && r <= 0xffef
}

// tokenScale reconciles the counts with the usage the provider reports:
// the prompt tokens it billed over those counted, for the calls made so
// far, scales the next counts. A tokenizer that matches the provider's
// keeps a scale near 1; the estimate, or OpenAI's count used for a
// compatible server with a tokenizer of its own, converge on what that
// provider bills after the first answers.
type tokenScale struct {
	counted, reported atomic.Int64
}

// observe adds one call's counted and reported prompt tokens; a call
// whose usage was not reported says nothing.
func (s *tokenScale) observe(counted int, reported int64) {
	if counted <= 0 || reported <= 0 {
		return
	}
	s.counted.Add(int64(counted))
	s.reported.Add(reported)
}

// The bounds of the scale, a half to four times the count: a provider that
// reports usage far off it is more likely wrong, or counting something
// else, than the count.
const (
	minTokenScaleDivisor = 2
	maxTokenScale        = 4
)

// apply scales counted tokens to the provider's measure, rounding up.
func (s *tokenScale) apply(counted int) int {
	c, r := s.counted.Load(), s.reported.Load()
	if c == 0 {
		return counted
	}
	n := int64(counted)
	scaled := (n*r + c - 1) / c
	return int(min(max(scaled, (n+minTokenScaleDivisor-1)/minTokenScaleDivisor), n*maxTokenScale))
}
