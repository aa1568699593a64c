// Command depfloor is the floor the libraries tenax is built on set under its
// start-up: the trivial cobra CLI (bench/cmd/trivialcli) with every outside
// package tenax's binary imports linked in by a blank import, so that their
// package initialisers run and nothing else does. Built with the tag
// nojsonschema it leaves out santhosh-tekuri/jsonschema/v6, to show what that
// one initialiser costs (docs/benchmarks.md, "Start-up").
//
//	go build -o /tmp/depfloor ./cmd/depfloor
//	go build -tags nojsonschema -o /tmp/depfloor-nojs ./cmd/depfloor
//	./startup.sh /path/to/tenax /tmp/trivialcli 9 /tmp/depfloor /tmp/depfloor-nojs
package main

import (
	_ "os/exec"
	_ "os/signal"

	"github.com/tenaxhq/tenax/bench/internal/cobracli"

	// The outside packages cmd/tenax imports, directly or through tenax's
	// own packages: go list -deps lists the same packages, standard ones
	// included, for this command and for ./cmd/tenax but for tenax's own.
	_ "cloud.google.com/go/auth"
	_ "cloud.google.com/go/auth/credentials"
	_ "github.com/Azure/azure-sdk-for-go/sdk/azcore"
	_ "github.com/DataDog/datadog-agent/pkg/template/html"
	_ "github.com/anthropics/anthropic-sdk-go"
	_ "github.com/aws/aws-sdk-go-v2/config"
	_ "github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	_ "github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	_ "github.com/goccy/go-yaml"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/openai/openai-go/v3"
	_ "github.com/openai/openai-go/v3/azure"
	_ "github.com/pkoukk/tiktoken-go"
	_ "github.com/prometheus/client_golang/prometheus/collectors"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/riverqueue/river"
	_ "github.com/riverqueue/river/riverdriver/riverpgxv5"
	_ "github.com/riverqueue/river/rivermigrate"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "golang.org/x/term"
	_ "golang.org/x/text/message"
	_ "golang.org/x/time/rate"
	_ "google.golang.org/genai"
)

// main is the trivial CLI's, so that depfloor differs from it by the
// libraries alone.
func main() { cobracli.Main("depfloor") }
