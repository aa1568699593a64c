package job

import (
	"github.com/tenaxhq/tenax/fix"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/task/llm"
)

// FixModel is the model of a fix spec's llm fixer (fix.Options.NewModel):
// an llm.Task that renders the fixer's "{{.system}}" and "{{.prompt}}",
// scripted by the spec's mock answers for provider mock without a
// base_url. It lives here rather than in fix because task/llm links the
// providers' SDKs.
func FixModel(f spec.Fixer) (fix.Model, error) {
	lc := llm.Config{
		Provider: f.Provider, BaseURL: f.BaseURL, APIKey: f.APIKey, Model: f.Model,
		System: "{{.system}}", Prompt: "{{.prompt}}", MaxTokens: f.MaxTokens,
		Temperature: f.Temperature, Timeout: f.Timeout,
	}
	if f.Provider == llm.ProviderMock && f.BaseURL == "" {
		lc.HTTPClient = mock.New(mock.Config{Answers: f.Mock.Answers}).Client()
	}
	// A gemini fixer's key, or a vertex fixer's project and location
	// from the environment ($GOOGLE_CLOUD_PROJECT, $GOOGLE_CLOUD_LOCATION).
	g, err := geminiClient(&lc, spec.Task{}, false)
	if err != nil {
		return nil, err
	}
	lc.Gemini = g
	t, err := llm.New(lc)
	if err != nil {
		return nil, err
	}
	return t, nil
}
