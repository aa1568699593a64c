package mock

import (
	"net/http"
	"path"
)

// listModels answers GET /v1/models with the mock's models, in the
// dialect's listing.
func (s *Server) listModels(x *exchange) outcome {
	if x.d.apiKey(x.r) == "" {
		x.fail(x.d.errs[errMissingKey](x))
		return answered
	}
	x.write(http.StatusOK, x.d.models())
	return answered
}

// getModel answers GET /v1/models/{id}: the model, or the dialect's 404.
func (s *Server) getModel(x *exchange) outcome {
	if x.d.apiKey(x.r) == "" {
		x.fail(x.d.errs[errMissingKey](x))
		return answered
	}
	x.model = path.Base(x.r.URL.Path)
	if !knownModel(x.model) {
		x.fail(x.d.errs[errUnknownModel](x))
		return answered
	}
	x.write(http.StatusOK, x.d.model(x.model))
	return answered
}

// countTokens answers Anthropic's POST /v1/messages/count_tokens with
// the request's input tokens, counted as the messages endpoint counts
// them.
func (s *Server) countTokens(x *exchange) outcome {
	if !x.readRequest() {
		return answered
	}
	if x.model = *x.req.Model; !knownModel(x.model) {
		x.fail(x.d.errs[errUnknownModel](x))
		return answered
	}
	x.write(http.StatusOK, mustJSON(map[string]int{"input_tokens": tokens(conversation(x.req)...)}))
	return answered
}
