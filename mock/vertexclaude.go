package mock

import (
	"encoding/json"
	"net/http"
	"strings"
)

// vertexClaudeVersion is the anthropic_version Claude on Vertex AI takes
// in the body.
const vertexClaudeVersion = "vertex-2023-10-16"

// anthropicVertex is Claude on Vertex AI: Anthropic's messages API at
// /v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:rawPredict,
// the model in the path, "anthropic_version": "vertex-2023-10-16" in the
// body and a Google bearer token (whose value the mock does not check)
// instead of x-api-key and anthropic-version. Its answers, faults and
// limits are Anthropic's (429 rate_limit_error, 529 overloaded_error);
// a request without a token, or with a bad one, is Google's 401
// UNAUTHENTICATED and a forbidden one its 403 PERMISSION_DENIED, as Vertex
// AI answers them before the model is reached.
var anthropicVertex = func() dialect {
	d := anthropic
	d.name = "anthropic-vertex"
	d.everyResponse = nil
	d.apiKey = bearerKey
	d.errs[errMissingKey] = func(*exchange) apiError {
		return googleError(401, "UNAUTHENTICATED", "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.", cAuthErrors)
	}
	d.errs[errBadKey] = func(*exchange) apiError {
		return googleError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.", cAuthErrors)
	}
	d.errs[errForbidden] = func(*exchange) apiError {
		return googleError(403, "PERMISSION_DENIED", "Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/projects/mock-project/locations/us-east5/publishers/anthropic/models/claude' (or it may not exist).", cForbidden)
	}
	d.errs[errUnknownRoute] = func(*exchange) apiError {
		return googleError(404, "NOT_FOUND", "The requested URL was not found on this server.", cBadRequests)
	}
	anthropicBody := anthropic.errorBody
	d.errorBody = func(requestID string, e apiError) []byte {
		if e.typ == "UNAUTHENTICATED" || e.typ == "PERMISSION_DENIED" || e.typ == "NOT_FOUND" {
			// Google's front end answers these, in google.rpc.Status.
			return gemini.errorBody(requestID, e)
		}
		return anthropicBody(requestID, e)
	}
	d.validate = validateVertexClaude
	return d
}()

// validateVertexClaude refuses what Vertex AI refuses of a Claude
// request: a body naming the model (it is the path's), a missing or other
// anthropic_version; then what Anthropic's API refuses but for its
// version header, which Vertex does not take.
func validateVertexClaude(x *exchange) *apiError {
	const inv = "invalid_request_error"
	var body struct {
		Model   json.RawMessage `json:"model"`
		Version *string         `json:"anthropic_version"`
	}
	_ = json.Unmarshal(x.body, &body)
	switch {
	case body.Model != nil:
		return bad(inv, "", "", "model: Extra inputs are not permitted")
	case body.Version == nil:
		return bad(inv, "", "", "anthropic_version: Field required")
	case *body.Version != vertexClaudeVersion:
		return bad(inv, "", "", "anthropic_version: Input should be '"+vertexClaudeVersion+"'")
	}
	return validateMessages(x)
}

// byPublisher picks the dialect of a Vertex AI path: Claude's for
// …/publishers/anthropic/…, Gemini's otherwise.
func byPublisher(r *http.Request) *dialect {
	if strings.Contains(r.URL.Path, "/publishers/anthropic/") {
		return &anthropicVertex
	}
	return &gemini
}

// vertexChat answers a Vertex AI model path: Claude's rawPredict in
// Anthropic's dialect, the others as geminiChat does.
func (s *Server) vertexChat(x *exchange) outcome {
	if x.d != &anthropicVertex {
		return s.geminiChat(x)
	}
	// projects/{p}/locations/{l}/publishers/anthropic/models/{model}:rawPredict
	parts := strings.SplitN(strings.TrimPrefix(x.r.URL.Path, vertexPath), "/", 7)
	if len(parts) != 7 || parts[0] == "" || parts[1] != "locations" || parts[2] == "" || parts[5] != "models" {
		x.fail(x.d.errs[errUnknownRoute](x))
		return answered
	}
	model, op, ok := strings.Cut(parts[6], ":")
	if !ok || model == "" || strings.Contains(model, "/") || op != "rawPredict" {
		// streamRawPredict is not served: tenax does not stream.
		x.fail(x.d.errs[errUnknownRoute](x))
		return answered
	}
	x.deployment = model
	return s.chat(x)
}
