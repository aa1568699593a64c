package mock

import (
	"net/http"
	"strings"
)

// azureOpenAI is Azure OpenAI's chat completions: OpenAI's wire format at
// a deployment's path (/openai/deployments/{name}/chat/completions
// ?api-version=…), authenticated by an api-key header or an Entra ID
// bearer token. The deployment names the model: deploy mock-echo or
// mock-json under their own names. Its limits are its own, as a
// deployment's are.
var azureOpenAI = func() dialect {
	d := openAI
	d.name = "azure"
	d.apiKey = func(r *http.Request) string {
		if k := r.Header.Get("Api-Key"); k != "" {
			return k
		}
		return bearerKey(r)
	}
	d.errs[errMissingKey] = func(*exchange) apiError {
		return apiError{status: 401, code: "401", counter: cAuthErrors,
			message: "Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API."}
	}
	d.errs[errBadKey] = func(*exchange) apiError {
		return apiError{status: 401, code: "401", counter: cAuthErrors,
			message: "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}
	}
	d.errs[errUnknownModel] = func(*exchange) apiError {
		return apiError{status: 404, code: "DeploymentNotFound", counter: cBadRequests,
			message: "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}
	}
	d.errs[errUnknownRoute] = func(*exchange) apiError {
		return apiError{status: 404, code: "404", counter: cBadRequests, message: "Resource not found"}
	}
	return d
}()

// azureDeploymentPath starts the paths of Azure's deployment routes.
const azureDeploymentPath = "/openai/deployments/"

// azureChat answers POST /openai/deployments/{name}/chat/completions as
// Azure does: the deployment in the path is the model, whatever the body
// says, and the api-version query parameter is required.
func (s *Server) azureChat(x *exchange) outcome {
	deployment, rest, ok := strings.Cut(strings.TrimPrefix(x.r.URL.Path, azureDeploymentPath), "/")
	if !ok || deployment == "" || rest != "chat/completions" || x.r.URL.Query().Get("api-version") == "" {
		x.fail(x.d.errs[errUnknownRoute](x))
		return answered
	}
	x.deployment = deployment
	return s.chat(x)
}
