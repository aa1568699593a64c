// Package gemini calls Google's generateContent for package task/llm
// through Google's Gen AI SDK for Go (google.golang.org/genai), on either
// of its backends: the Gemini API (an API key) or Vertex AI (Google
// credentials, a project and a location). An llm.Config with provider
// gemini or vertex takes a Client as its Gemini field. The SDK lives
// here, apart, so that the packages that only read tasks and records
// (report, web, metrics) do not carry it.
//
// The SDK never retries: tenax alone decides.
package gemini

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	"google.golang.org/genai"

	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
	"github.com/tenaxhq/tenax/task/llm"
)

// Options say where and as whom a Client calls.
type Options struct {
	// Vertex selects Vertex AI; false is the Gemini API.
	Vertex bool
	// APIKey is the Gemini API's key; "" means $GOOGLE_API_KEY, then
	// $GEMINI_API_KEY, as the SDK reads them. Gemini API only.
	APIKey string
	// Project and Location are Vertex AI's Google Cloud project and
	// location ("us-central1", "global"); "" means $GOOGLE_CLOUD_PROJECT
	// and $GOOGLE_CLOUD_LOCATION (or $GOOGLE_CLOUD_REGION). Vertex only.
	Project, Location string
	// Credentials are Vertex AI's; nil means the application default
	// credentials ($GOOGLE_APPLICATION_CREDENTIALS, gcloud's, the
	// metadata server's), found when New runs and asked for a token only
	// when a call is made. Vertex only.
	Credentials *auth.Credentials
	// Endpoint replaces the backend's base URL (a private endpoint, a
	// proxy, the mock); "" means Google's.
	Endpoint string
}

// Client is the generateContent call, an llm.Generator. It is safe for
// concurrent use.
type Client struct {
	sdk   *genai.Client
	creds *auth.Credentials // Vertex's; nil on the Gemini API
	// backend names the backend in a call's SignedBy: "gemini" or
	// "vertex".
	backend string
}

// apiVersions are the API versions tenax calls: the Gemini API's v1beta,
// where responseJsonSchema and thinking are, and Vertex AI's GA v1.
const (
	geminiAPIVersion = "v1beta"
	vertexAPIVersion = "v1"
)

// New checks opts and builds the Client. No request is made: Vertex's
// credentials are found, not yet exchanged for a token.
func New(ctx context.Context, opts Options) (*Client, error) {
	c := &Client{backend: llm.ProviderGemini}
	cc := &genai.ClientConfig{
		Backend: genai.BackendGeminiAPI,
		// The SDK's HTTP client is a door to the call's send (the task's
		// HTTP client and its capture of the response), found in the
		// request's context; with a client of its own, the SDK adds no
		// credentials of its own either: Vertex's are added here.
		HTTPClient: &http.Client{Transport: c},
		HTTPOptions: genai.HTTPOptions{
			BaseURL: opts.Endpoint, APIVersion: geminiAPIVersion,
			// One attempt, the SDK's retry loop off: tenax alone decides.
			RetryOptions: &genai.HTTPRetryOptions{Attempts: new(int32(1))},
		},
	}
	if opts.Vertex {
		if opts.APIKey != "" {
			return nil, errors.New("gemini: vertex authenticates with Google credentials, not an API key")
		}
		cc.Backend, cc.HTTPOptions.APIVersion = genai.BackendVertexAI, vertexAPIVersion
		c.backend = llm.ProviderVertex
		cc.Project = cmp.Or(opts.Project, os.Getenv("GOOGLE_CLOUD_PROJECT"))
		cc.Location = cmp.Or(opts.Location, os.Getenv("GOOGLE_CLOUD_LOCATION"), os.Getenv("GOOGLE_CLOUD_REGION"))
		if cc.Project == "" || cc.Location == "" {
			return nil, errors.New("gemini: vertex needs a project and a location: set task.project and task.region, or $GOOGLE_CLOUD_PROJECT and $GOOGLE_CLOUD_LOCATION")
		}
		c.creds = opts.Credentials
		if c.creds == nil {
			creds, err := DefaultCredentials()
			if err != nil {
				return nil, fmt.Errorf("gemini: %w", err)
			}
			c.creds = creds
		}
	} else {
		cc.APIKey = cmp.Or(opts.APIKey, os.Getenv("GOOGLE_API_KEY"), os.Getenv("GEMINI_API_KEY"))
		if cc.APIKey == "" {
			return nil, errors.New("gemini: no API key: set task.api_key, or $GEMINI_API_KEY (or $GOOGLE_API_KEY)")
		}
	}
	sdk, err := genai.NewClient(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	c.sdk = sdk
	return c, nil
}

// sendKey is the request context's key of the call's send.
type sendKey struct{}

// RoundTrip sends a request of the SDK's through the send of its call,
// with Vertex's token.
func (c *Client) RoundTrip(r *http.Request) (*http.Response, error) {
	send, ok := r.Context().Value(sendKey{}).(func(*http.Request) (*http.Response, error))
	if !ok {
		return nil, errors.New("gemini: a request outside Generate")
	}
	if c.creds != nil {
		r = r.Clone(r.Context())
		if err := Authorizer(c.creds)(r); err != nil {
			return nil, fmt.Errorf("gemini: %w", err)
		}
	}
	return send(r)
}

// DefaultCredentials finds Vertex AI's application default credentials
// ($GOOGLE_APPLICATION_CREDENTIALS, gcloud's, the metadata server's),
// scoped to cloud-platform. No token is asked for yet.
func DefaultCredentials() (*auth.Credentials, error) {
	creds, err := credentials.DetectDefault(&credentials.DetectOptions{Scopes: []string{"https://www.googleapis.com/auth/cloud-platform"}})
	if err != nil {
		return nil, fmt.Errorf("vertex's application default credentials: %w", err)
	}
	return creds, nil
}

// Authorizer sets a request's Vertex AI credentials from creds: its
// access token as Authorization (refreshed by creds when it expires), and
// its quota project, if any, as X-Goog-User-Project. It is provider
// vertex's and Claude on Vertex AI's (llm.AnthropicVertex.Authorize).
func Authorizer(creds *auth.Credentials) func(*http.Request) error {
	return func(r *http.Request) error {
		tok, err := creds.Token(r.Context())
		if err != nil {
			return fmt.Errorf("vertex's access token: %w", err)
		}
		r.Header.Set("Authorization", cmp.Or(tok.Type, "Bearer")+" "+tok.Value)
		if qp, err := creds.QuotaProjectID(r.Context()); err == nil && qp != "" {
			r.Header.Set("X-Goog-User-Project", qp)
		}
		return nil
	}
}

// Generate makes the call, every request through send. An error response
// comes back as the SDK's genai.APIError, which package task/llm reads
// again from the captured body.
func (c *Client) Generate(ctx context.Context, req llm.GenerateRequest, send func(*http.Request) (*http.Response, error)) (llm.GenerateReply, error) {
	signer := c.signer(req.Model)
	contents, config := generateInput(req, signer)
	out, err := c.sdk.Models.GenerateContent(context.WithValue(ctx, sendKey{}, send), req.Model, contents, config)
	if err != nil {
		return llm.GenerateReply{}, err
	}
	return generateReply(out, len(req.Steps), signer), nil
}

// DecodeGenerate reads a generateContent answer that came another way
// than Generate: a request's response in a Gemini batch, in the Gemini
// API's JSON, read into the SDK's type and then as Generate reads it.
func (c *Client) DecodeGenerate(body []byte) (llm.GenerateReply, error) {
	var out genai.GenerateContentResponse
	if err := json.Unmarshal(body, &out); err != nil {
		return llm.GenerateReply{}, fmt.Errorf("gemini: a generateContent answer: %w", err)
	}
	return generateReply(&out, 0, c.signer(out.ModelVersion)), nil
}

// signer is a call's SignedBy for an answer of model on c's backend:
// "gemini/gemini-3-pro-preview". A signature is sent back only to the
// backend and model that issued it: Google documents a trace moved from
// another model as one without valid signatures.
func (c *Client) signer(model string) string {
	return c.backend + "/" + modelName(model)
}

// modelName is model without a resource path ("models/…",
// "publishers/google/models/…").
func modelName(model string) string {
	return model[strings.LastIndexByte(model, '/')+1:]
}

// validatesSignatures reports whether model is a Gemini 3 model or later
// ("gemini-3-pro-preview", "gemini-3.1-flash"), which refuses a
// functionCall of the conversation's current turn sent back without its
// thoughtSignature (400 INVALID_ARGUMENT, "Function call is missing a
// thought_signature in functionCall parts"). Earlier models issue
// signatures when they think but do not require them.
func validatesSignatures(model string) bool {
	v, ok := strings.CutPrefix(modelName(model), "gemini-")
	if !ok {
		return false
	}
	major := 0
	for _, r := range v {
		if r < '0' || r > '9' {
			break
		}
		major = major*10 + int(r-'0')
	}
	return major >= 3
}

// skipSignature is the thoughtSignature Google documents for a function
// call the model did not issue itself (a step recorded on another
// provider or model): "skip_thought_signature_validator" read as the
// base64url it is spelled in, so that the SDK's standard base64 of these
// bytes is the same value to the API.
var skipSignature = func() []byte {
	b, err := base64.URLEncoding.DecodeString("skip_thought_signature_validator")
	if err != nil {
		panic(err)
	}
	return b
}()

// generateInput is req in the SDK's shape.
func generateInput(req llm.GenerateRequest, signer string) ([]*genai.Content, *genai.GenerateContentConfig) {
	config := &genai.GenerateContentConfig{StopSequences: req.Stop, MaxOutputTokens: int32(min(req.MaxTokens, 1<<31-1))}
	if len(req.System) > 0 {
		config.SystemInstruction = &genai.Content{}
		for _, s := range req.System {
			config.SystemInstruction.Parts = append(config.SystemInstruction.Parts, &genai.Part{Text: s})
		}
	}
	if req.Temperature != nil {
		config.Temperature = new(float32(*req.Temperature))
	}
	if req.TopP != nil {
		config.TopP = new(float32(*req.TopP))
	}
	if req.Seed != nil {
		config.Seed = new(int32(*req.Seed))
	}
	if req.JSON || req.Schema != nil {
		config.ResponseMIMEType = "application/json"
	}
	if req.Schema != nil {
		config.ResponseJsonSchema = req.Schema
	}
	if len(req.Extra) > 0 {
		config.HTTPOptions = &genai.HTTPOptions{ExtraBody: req.Extra}
	}
	contents := make([]*genai.Content, 0, len(req.Messages))
	for _, m := range req.Messages {
		role := genai.RoleUser
		if m.Role == "assistant" {
			role = genai.RoleModel
		}
		contents = append(contents, genai.NewContentFromText(m.Content, genai.Role(role)))
	}
	if len(req.Tools) > 0 {
		tool := &genai.Tool{}
		for _, d := range req.Tools {
			tool.FunctionDeclarations = append(tool.FunctionDeclarations,
				&genai.FunctionDeclaration{Name: d.Name, Description: d.Description, ParametersJsonSchema: object(d.Parameters)})
		}
		config.Tools = []*genai.Tool{tool}
	}
	return append(contents, stepContents(req.Steps, signer, validatesSignatures(req.Model))...), config
}

// madeUpID starts the id tenax gives a functionCall that came without
// one (the Gemini API sends none to most models): a call's result must
// name its call in the step log. It is left out when the step is sent
// back, as the model sent it.
const madeUpID = "gemini-call-"

// stepContents are an agent's steps as contents: a model content of the
// step's text and functionCall parts, then a user content of
// functionResponse parts, each {"output": …} or, for an error, {"error":
// …}, naming its call's function and id. Arguments that are not an
// object (only another provider's recorded step holds such) go as {}.
// A call goes with the thoughtSignature it came with when signer (this
// backend and model) issued it; otherwise, to a model that validates
// signatures (strict), a step's first call goes with skipSignature, as
// Google documents for calls it did not issue: the step was recorded on
// another route.
func stepContents(steps []agent.Step, signer string, strict bool) []*genai.Content {
	var out []*genai.Content
	for _, s := range steps {
		m := &genai.Content{Role: genai.RoleModel}
		if s.Text != "" {
			m.Parts = append(m.Parts, &genai.Part{Text: s.Text})
		}
		for i, c := range s.Calls {
			p := &genai.Part{FunctionCall: &genai.FunctionCall{ID: sentID(c.ID), Name: c.Name, Args: object(c.Arguments)}}
			switch {
			case len(c.Signature) > 0 && c.SignedBy == signer:
				p.ThoughtSignature = c.Signature
			case strict && i == 0:
				p.ThoughtSignature = skipSignature
			}
			m.Parts = append(m.Parts, p)
		}
		if len(m.Parts) == 0 {
			m.Parts = append(m.Parts, &genai.Part{Text: "(no answer)"})
		}
		u := &genai.Content{Role: genai.RoleUser}
		for _, o := range s.Outcomes {
			key := "output"
			if o.IsError {
				key = "error"
			}
			u.Parts = append(u.Parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: sentID(o.CallID), Name: o.Name,
				Response: map[string]any{key: o.Content}}})
		}
		out = append(out, m)
		if len(u.Parts) > 0 {
			out = append(out, u)
		}
	}
	return out
}

// sentID is a call's id as a step sends it back: none for one tenax made
// up.
func sentID(id string) string {
	if strings.HasPrefix(id, madeUpID) {
		return ""
	}
	return id
}

// object is raw as a JSON object's value: {} when raw is not an object.
func object(raw json.RawMessage) map[string]any {
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return map[string]any{}
	}
	return obj
}

// generateReply reads the SDK's answer: the first candidate's text (its
// thoughts left out), its calls with their thoughtSignatures (signed by
// signer), its finish reason and the safety ratings that blocked it, or
// the prompt's block; and the usage.
func generateReply(out *genai.GenerateContentResponse, step int, signer string) llm.GenerateReply {
	var rep llm.GenerateReply
	if len(out.Candidates) > 0 {
		cand := out.Candidates[0]
		var text strings.Builder
		if cand.Content != nil {
			for _, p := range cand.Content.Parts {
				if p != nil && !p.Thought {
					text.WriteString(p.Text)
				}
				if p != nil && p.FunctionCall != nil {
					c := call(p.FunctionCall, step, len(rep.Calls))
					if len(p.ThoughtSignature) > 0 {
						c.Signature, c.SignedBy = p.ThoughtSignature, signer
					}
					rep.Calls = append(rep.Calls, c)
				}
			}
		}
		rep.Text, rep.FinishReason, rep.Safety = text.String(), string(cand.FinishReason), blockedRatings(cand.SafetyRatings)
	} else if pf := out.PromptFeedback; pf != nil && pf.BlockReason != "" {
		rep.FinishReason, rep.PromptBlocked = string(pf.BlockReason), true
		rep.Safety = cmp.Or(pf.BlockReasonMessage, blockedRatings(pf.SafetyRatings))
	}
	if u := out.UsageMetadata; u != nil {
		// promptTokenCount holds the cached tokens; thoughts are billed
		// as output apart from candidatesTokenCount.
		rep.Usage = task.Usage{
			InputTokens:       int64(u.PromptTokenCount) + int64(u.ToolUsePromptTokenCount),
			OutputTokens:      int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount),
			CachedInputTokens: int64(u.CachedContentTokenCount),
			ReasoningTokens:   int64(u.ThoughtsTokenCount),
		}
	}
	return rep
}

// call is a functionCall part as an agent's call, the i-th of the answer
// to step step: its id the model's, or one made up (madeUpID).
func call(fc *genai.FunctionCall, step, i int) agent.Call {
	args := []byte("{}")
	if fc.Args != nil {
		if b, err := json.Marshal(fc.Args); err == nil {
			args = b
		}
	}
	return agent.Call{ID: cmp.Or(fc.ID, fmt.Sprintf("%s%d-%d", madeUpID, step, i)), Name: fc.Name, Arguments: args}
}

// blockedRatings names the ratings that blocked, or else those rated
// above negligible: "HARM_CATEGORY_DANGEROUS_CONTENT probability HIGH
// (blocked)".
func blockedRatings(ratings []*genai.SafetyRating) string {
	var out []string
	for _, r := range ratings {
		if r == nil || !r.Blocked && (r.Probability == "" || r.Probability == genai.HarmProbabilityNegligible) {
			continue
		}
		s := string(r.Category) + " probability " + string(r.Probability)
		if r.Blocked {
			s += " (blocked)"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}
