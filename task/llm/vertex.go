package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	aoption "github.com/anthropics/anthropic-sdk-go/option"
)

// AnthropicVertex sends provider anthropic's calls to Claude on Google
// Cloud's Vertex AI instead of Anthropic's API: the same Messages body,
// its model moved into the path
// /v1/projects/{Project}/locations/{Location}/publishers/anthropic/models/{model}:rawPredict,
// "anthropic_version": "vertex-2023-10-16" added to it, and Google
// credentials in place of the x-api-key. It is what anthropic-sdk-go's
// vertex package does, without the google.golang.org/api module that
// package links (docs/providers.md, "Claude on Vertex AI").
type AnthropicVertex struct {
	// Project is the Google Cloud project; Location its Vertex AI location
	// ("us-east5", "europe-west1", "global"). Both are required.
	Project, Location string
	// Authorize sets a request's Google credentials (Authorization:
	// Bearer, and X-Goog-User-Project for a quota project); required.
	// Package task/llm/gemini's Authorizer gives it from
	// cloud.google.com/go/auth credentials, as provider vertex's calls get
	// theirs.
	Authorize func(*http.Request) error
}

// VertexAnthropicVersion is the anthropic_version Claude on Vertex AI
// takes in the body, where Anthropic's API takes an anthropic-version
// header.
const VertexAnthropicVersion = "vertex-2023-10-16"

// VertexBaseURL is the Vertex AI endpoint of location: its regional host
// {location}-aiplatform.googleapis.com, aiplatform.googleapis.com for
// global, and the multi-regions' own hosts for us and eu.
func VertexBaseURL(location string) string {
	switch location {
	case "global":
		return "https://aiplatform.googleapis.com/"
	case "us", "eu":
		return "https://aiplatform." + location + ".rep.googleapis.com/"
	}
	return "https://" + location + "-aiplatform.googleapis.com/"
}

// check says what v lacks.
func (v *AnthropicVertex) check() error {
	switch {
	case v.Project == "":
		return errors.New("llm: Claude on Vertex AI needs a project: set task.project (or $GOOGLE_CLOUD_PROJECT)")
	case v.Location == "":
		return errors.New("llm: Claude on Vertex AI needs a location: set task.region (us-east5, europe-west1, global…) or $GOOGLE_CLOUD_LOCATION")
	case strings.ContainsAny(v.Project+v.Location, "/?#:"):
		return fmt.Errorf("llm: Claude on Vertex AI: project %q or location %q cannot be a path segment", v.Project, v.Location)
	case v.Authorize == nil:
		return errors.New("llm: Claude on Vertex AI needs Google credentials (AnthropicVertex.Authorize)")
	}
	return nil
}

// middleware turns the SDK's POST …/v1/messages into Vertex AI's
// rawPredict (streamRawPredict for a stream) of the body's model: the
// model leaves the body, anthropic_version enters it, Anthropic's
// headers leave the request and Google's credentials enter it. Any other
// request goes on unchanged but for the credentials.
func (v *AnthropicVertex) middleware(req *http.Request, next aoption.MiddlewareNext) (*http.Response, error) {
	prefix, ok := strings.CutSuffix(req.URL.Path, "/v1/messages")
	if ok && req.Method == http.MethodPost && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		body, model, stream, err := vertexBody(body)
		if err != nil {
			return nil, err
		}
		method := "rawPredict"
		if stream {
			method = "streamRawPredict"
		}
		req.URL.Path = prefix + "/v1/projects/" + v.Project + "/locations/" + v.Location +
			"/publishers/anthropic/models/" + model + ":" + method
		req.URL.RawPath = prefix + "/v1/projects/" + url.PathEscape(v.Project) + "/locations/" + url.PathEscape(v.Location) +
			"/publishers/anthropic/models/" + url.PathEscape(model) + ":" + method
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
	}
	req.Header.Del("X-Api-Key")
	req.Header.Del("Anthropic-Version")
	if err := v.Authorize(req); err != nil {
		return nil, fmt.Errorf("vertex credentials: %w", err)
	}
	return next(req)
}

// vertexBody is a Messages body as Vertex AI takes it: without its
// model, which it returns, and with anthropic_version (unless the body
// has one, from extra_body); stream says whether it asks for a stream.
func vertexBody(body []byte) (out []byte, model string, stream bool, err error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, "", false, fmt.Errorf("vertex: the request body: %w", err)
	}
	if err := json.Unmarshal(fields["model"], &model); err != nil || model == "" {
		return nil, "", false, errors.New("vertex: the request names no model")
	}
	if s, ok := fields["stream"]; ok {
		_ = json.Unmarshal(s, &stream)
	}
	delete(fields, "model")
	if _, ok := fields["anthropic_version"]; !ok {
		fields["anthropic_version"] = json.RawMessage(`"` + VertexAnthropicVersion + `"`)
	}
	// encoding/json writes a map's keys sorted: the body is the same
	// bytes for the same call.
	out, err = json.Marshal(fields)
	return out, model, stream, err
}
