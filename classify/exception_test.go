package classify

import (
	"strings"
	"testing"
)

// pyTraceback wraps an exception line in the traceback Python prints
// above it. Its frames quote source that holds network words ("timeout",
// "connection"), which must not decide: only the exception line does.
func pyTraceback(exceptionLine string) string {
	return `Traceback (most recent call last):
  File "/srv/review/review.py", line 41, in <module>
    main(sys.argv[1])
  File "/srv/review/review.py", line 33, in main
    reply = client.call(prompt, timeout=600)  # the connection is slow
            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/srv/review/.venv/lib/python3.12/site-packages/example/_base_client.py", line 1047, in request
    raise self._make_status_error_from_response(err.response) from None
` + exceptionLine + "\n"
}

// TestPythonExceptionLinesAreClassifiedByTheirClass: the exception lines
// of Python's standard library and of the common HTTP clients and SDKs,
// as they print them, decide by their class and by the status, provider
// code or AWS code their message names; the same line printed alone
// (f"{type(e).__name__}: {e}", no traceback) decides the same. They were
// all "item (exit 1)": not retried, and never fatal to the breaker.
func TestPythonExceptionLinesAreClassifiedByTheirClass(t *testing.T) {
	tests := []struct {
		line   string
		class  Class
		reason string // after "exit 1, stderr "
	}{
		// requests
		{`requests.exceptions.ConnectionError: ('Connection aborted.', RemoteDisconnected('Remote end closed connection without response'))`, Retryable, "exception requests.exceptions.ConnectionError"},
		{`requests.exceptions.ConnectionError: ('Connection aborted.', ConnectionResetError(104, 'Connection reset by peer'))`, Retryable, "exception requests.exceptions.ConnectionError"},
		{`requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='api.openai.com', port=443): Read timed out. (read timeout=600)`, Retryable, "exception requests.exceptions.ReadTimeout"},
		{`requests.exceptions.ConnectTimeout: HTTPSConnectionPool(host='10.255.255.1', port=443): Max retries exceeded with url: /v1/chat/completions (Caused by ConnectTimeoutError(<urllib3.connection.HTTPSConnection object at 0x7f2b1c3d4e50>, 'Connection to 10.255.255.1 timed out. (connect timeout=10)'))`, Retryable, "exception requests.exceptions.ConnectTimeout"},
		{`requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.anthropic.com', port=443): Max retries exceeded with url: /v1/messages (Caused by NameResolutionError("<urllib3.connection.HTTPSConnection object at 0x7f8a2c1b3d90>: Failed to resolve 'api.anthropic.com' ([Errno -3] Temporary failure in name resolution)"))`, Retryable, "exception requests.exceptions.ConnectionError"},
		{`requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.anthropic.comm', port=443): Max retries exceeded with url: /v1/messages (Caused by NameResolutionError("<urllib3.connection.HTTPSConnection object at 0x7f8a2c1b3d90>: Failed to resolve 'api.anthropic.comm' ([Errno -2] Name or service not known)"))`, Fatal, "exception requests.exceptions.ConnectionError, DNS not found"},
		{`requests.exceptions.SSLError: HTTPSConnectionPool(host='internal.example.com', port=443): Max retries exceeded with url: / (Caused by SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate (_ssl.c:1006)')))`, Fatal, "exception requests.exceptions.SSLError, certificate verify failed"},
		{`requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url: https://api.example.com/v1/items`, Retryable, "exception requests.exceptions.HTTPError, status 429"},
		{`requests.exceptions.HTTPError: 503 Server Error: Service Unavailable for url: https://api.example.com/v1/items`, Retryable, "exception requests.exceptions.HTTPError, status 503"},
		{`requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://api.example.com/v1/items`, Fatal, "exception requests.exceptions.HTTPError, status 401"},
		{`requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://api.example.com/v1/items/42`, Item, "exception requests.exceptions.HTTPError, status 404"},
		{`requests.exceptions.ChunkedEncodingError: ("Connection broken: InvalidChunkLength(got length b'', 0 bytes read)", InvalidChunkLength(got length b'', 0 bytes read))`, Retryable, "exception requests.exceptions.ChunkedEncodingError"},

		// urllib3
		{`urllib3.exceptions.MaxRetryError: HTTPConnectionPool(host='localhost', port=8000): Max retries exceeded with url: /v1/embeddings (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f0c8a1e2f10>: Failed to establish a new connection: [Errno 111] Connection refused'))`, Retryable, "exception urllib3.exceptions.MaxRetryError"},
		{`urllib3.exceptions.ProtocolError: ('Connection aborted.', RemoteDisconnected('Remote end closed connection without response'))`, Retryable, "exception urllib3.exceptions.ProtocolError"},
		{`urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='s3.amazonaws.com', port=443): Read timed out. (read timeout=60)`, Retryable, "exception urllib3.exceptions.ReadTimeoutError"},

		// httpx and httpcore
		{`httpx.RemoteProtocolError: Server disconnected without sending a response.`, Retryable, "exception httpx.RemoteProtocolError"},
		{`httpx.ConnectError: [Errno 111] Connection refused`, Retryable, "exception httpx.ConnectError"},
		{`httpx.ConnectError: [Errno -2] Name or service not known`, Fatal, "exception httpx.ConnectError, DNS not found"},
		{`httpx.ReadTimeout: The read operation timed out`, Retryable, "exception httpx.ReadTimeout"},
		{`httpx.PoolTimeout`, Retryable, "exception httpx.PoolTimeout"},
		{`httpx.HTTPStatusError: Server error '503 Service Unavailable' for url 'https://api.example.com/v1/score'`, Retryable, "exception httpx.HTTPStatusError, status 503"},
		{`httpx.HTTPStatusError: Client error '422 Unprocessable Entity' for url 'https://api.example.com/v1/score'`, Item, "exception httpx.HTTPStatusError, status 422"},
		{`httpcore.ReadError: [Errno 104] Connection reset by peer`, Retryable, "exception httpcore.ReadError"},

		// aiohttp
		{`aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host api.openai.com:443 ssl:default [Connection refused]`, Retryable, "exception aiohttp.client_exceptions.ClientConnectorError"},
		{`aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected`, Retryable, "exception aiohttp.client_exceptions.ServerDisconnectedError"},
		{`aiohttp.client_exceptions.ClientResponseError: 429, message='Too Many Requests', url='https://api.example.com/v1/jobs'`, Retryable, "exception aiohttp.client_exceptions.ClientResponseError, status 429"},
		{`aiohttp.client_exceptions.ClientOSError: [Errno 104] Connection reset by peer`, Retryable, "exception aiohttp.client_exceptions.ClientOSError"},
		{`aiohttp.client_exceptions.ClientConnectorCertificateError: Cannot connect to host self-signed.badssl.com:443 ssl:True [SSLCertVerificationError: (1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate (_ssl.c:1006)")]`, Fatal, "exception aiohttp.client_exceptions.ClientConnectorCertificateError"},

		// botocore
		{`botocore.exceptions.EndpointConnectionError: Could not connect to the endpoint URL: "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke"`, Retryable, "exception botocore.exceptions.EndpointConnectionError"},
		{`botocore.exceptions.ReadTimeoutError: Read timeout on endpoint URL: "https://bedrock-runtime.us-west-2.amazonaws.com/model/meta.llama3-70b-instruct-v1%3A0/invoke"`, Retryable, "exception botocore.exceptions.ReadTimeoutError"},
		{`botocore.exceptions.ClientError: An error occurred (ThrottlingException) when calling the InvokeModel operation (reached max retries: 4): Too many requests, please wait before trying again.`, Retryable, "exception botocore.exceptions.ClientError, code ThrottlingException"},
		{`botocore.exceptions.ClientError: An error occurred (AccessDeniedException) when calling the InvokeModel operation: You don't have access to the model with the specified model ID.`, Fatal, "exception botocore.exceptions.ClientError, code AccessDeniedException"},
		{`botocore.exceptions.ClientError: An error occurred (ValidationException) when calling the InvokeModel operation: Input is too long for requested model.`, Item, "exception botocore.exceptions.ClientError, code ValidationException"},
		{`botocore.errorfactory.ThrottlingException: An error occurred (ThrottlingException) when calling the Converse operation: Too many tokens, please wait before trying again.`, Retryable, "exception botocore.errorfactory.ThrottlingException, code ThrottlingException"},
		{`botocore.exceptions.NoCredentialsError: Unable to locate credentials`, Fatal, "exception botocore.exceptions.NoCredentialsError"},

		// openai 1.x
		{`openai.APIConnectionError: Connection error.`, Retryable, "exception openai.APIConnectionError"},
		{`openai.APITimeoutError: Request timed out.`, Retryable, "exception openai.APITimeoutError"},
		{`openai.RateLimitError: Error code: 429 - {'error': {'message': 'Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29774, Requested 1187. Please try again in 1.922s. Visit https://platform.openai.com/account/rate-limits to learn more.', 'type': 'tokens', 'param': None, 'code': 'rate_limit_exceeded'}}`, Retryable, "exception openai.RateLimitError, status 429 code rate_limit_exceeded"},
		{`openai.RateLimitError: Error code: 429 - {'error': {'message': 'You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.', 'type': 'insufficient_quota', 'param': None, 'code': 'insufficient_quota'}}`, Fatal, "exception openai.RateLimitError, status 429 code insufficient_quota"},
		{`openai.RateLimitError: Error code: 429 - {'error': {'message': 'Request too large for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Requested 52114. The input or output tokens must be reduced in order to run successfully.', 'type': 'tokens', 'param': None, 'code': 'rate_limit_exceeded'}}`, Item, "exception openai.RateLimitError, status 429 request too large"},
		{`openai.InternalServerError: Error code: 500 - {'error': {'message': 'The server had an error while processing your request. Sorry about that!', 'type': 'server_error', 'param': None, 'code': None}}`, Retryable, "exception openai.InternalServerError, status 500 code server_error"},
		{`openai.InternalServerError: Error code: 502 - {'error': {'code': 502, 'message': 'Bad gateway.', 'param': None, 'type': 'cf_bad_gateway'}}`, Retryable, "exception openai.InternalServerError, status 502 code cf_bad_gateway"},
		{`openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided: sk-proj-********************Xy9Z. You can find your API key at https://platform.openai.com/account/api-keys.', 'type': 'invalid_request_error', 'param': None, 'code': 'invalid_api_key'}}`, Fatal, "exception openai.AuthenticationError, status 401 code invalid_api_key"},
		{`openai.PermissionDeniedError: Error code: 403 - {'error': {'code': 'unsupported_country_region_territory', 'message': 'Country, region, or territory not supported', 'param': None, 'type': 'request_forbidden'}}`, Fatal, "exception openai.PermissionDeniedError, status 403 code unsupported_country_region_territory"},
		{`PermissionDeniedError: Error code: 403`, Fatal, "exception PermissionDeniedError, status 403"},
		{`openai.BadRequestError: Error code: 400 - {'error': {'message': "This model's maximum context length is 128000 tokens. However, your messages resulted in 140213 tokens. Please reduce the length of the messages.", 'type': 'invalid_request_error', 'param': 'messages', 'code': 'context_length_exceeded'}}`, Item, "exception openai.BadRequestError, status 400 code context_length_exceeded"},
		{"openai.NotFoundError: Error code: 404 - {'error': {'message': 'The model `gpt-5-turbo` does not exist or you do not have access to it.', 'type': 'invalid_request_error', 'param': None, 'code': 'model_not_found'}}", Fatal, "exception openai.NotFoundError, status 404 code model_not_found"},

		// openai 0.x
		{`openai.error.RateLimitError: You exceeded your current quota, please check your plan and billing details.`, Fatal, "exception openai.error.RateLimitError, status 429 code insufficient_quota"},
		{`openai.error.ServiceUnavailableError: The server is overloaded or not ready yet.`, Retryable, "exception openai.error.ServiceUnavailableError, status 503"},

		// anthropic
		{`anthropic.APIConnectionError: Connection error.`, Retryable, "exception anthropic.APIConnectionError"},
		{`anthropic.RateLimitError: Error code: 429 - {'type': 'error', 'error': {'type': 'rate_limit_error', 'message': 'This request would exceed the rate limit for your organization (5f1e7c8a) of 50,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.'}}`, Retryable, "exception anthropic.RateLimitError, status 429 code rate_limit_error"},
		{`anthropic.InternalServerError: Error code: 529 - {'type': 'error', 'error': {'type': 'overloaded_error', 'message': 'Overloaded'}}`, Retryable, "exception anthropic.InternalServerError, status 529 code overloaded_error"},
		{`anthropic.BadRequestError: Error code: 400 - {'type': 'error', 'error': {'type': 'invalid_request_error', 'message': 'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.'}}`, Fatal, "exception anthropic.BadRequestError, status 400 credit balance too low"},
		{`anthropic.AuthenticationError: Error code: 401 - {'type': 'error', 'error': {'type': 'authentication_error', 'message': 'invalid x-api-key'}}`, Fatal, "exception anthropic.AuthenticationError, status 401 code authentication_error"},

		// google-genai
		{`google.genai.errors.ClientError: 429 RESOURCE_EXHAUSTED. {'error': {'code': 429, 'message': 'Resource has been exhausted (e.g. check quota).', 'status': 'RESOURCE_EXHAUSTED'}}`, Retryable, "exception google.genai.errors.ClientError, status 429"},

		// Python and its standard library
		{`ConnectionError: connection pool exhausted`, Retryable, "exception ConnectionError"},
		{`ConnectionResetError: [Errno 104] Connection reset by peer`, Retryable, "exception ConnectionResetError"},
		{`TimeoutError: [Errno 110] Connection timed out`, Retryable, "exception TimeoutError"},
		{`asyncio.exceptions.TimeoutError`, Retryable, "exception asyncio.exceptions.TimeoutError"},
		{`socket.gaierror: [Errno -3] Temporary failure in name resolution`, Retryable, "exception socket.gaierror"},
		{`socket.timeout: timed out`, Retryable, "exception socket.timeout"},
		{`urllib.error.URLError: <urlopen error [Errno 111] Connection refused>`, Retryable, "exception urllib.error.URLError"},
		{`urllib.error.HTTPError: HTTP Error 503: Service Unavailable`, Retryable, "exception urllib.error.HTTPError, status 503"},
		{`http.client.RemoteDisconnected: Remote end closed connection without response`, Retryable, "exception http.client.RemoteDisconnected"},
		{`ssl.SSLEOFError: [SSL: UNEXPECTED_EOF_WHILE_READING] EOF occurred in violation of protocol (_ssl.c:1006)`, Retryable, "exception ssl.SSLEOFError"},
		{`OSError: [Errno 101] Network is unreachable`, Retryable, `keyword "network is unreachable"`},
		{`OSError: [Errno 113] No route to host`, Retryable, `keyword "no route to host"`},
	}
	if len(tests) < 30 {
		t.Fatalf("%d lines; the table must hold at least 30", len(tests))
	}
	for _, tt := range tests {
		name := tt.line
		if i := strings.IndexAny(name, ":"); i > 0 && len(name) > i+30 {
			name = name[:i+30]
		}
		for form, stderr := range map[string]string{"traceback": pyTraceback(tt.line), "alone": tt.line + "\n"} {
			t.Run(form+"/"+name, func(t *testing.T) {
				want := Decision{Class: tt.class, Reason: "exit 1, stderr " + tt.reason}
				if got := Classify(&exitErr{code: 1, stderr: stderr}); got != want {
					t.Errorf("stderr ending in\n\t%s\nclassified %v, want %v", tt.line, got, want)
				}
			})
		}
	}
}

// TestAProgramsOwnErrorIsNotRetriedForItsWords: a ValueError, a KeyError
// or a failed JSON decode is the program's mistake about its data; a
// network word in its message ("invalid timeout") was retried.
func TestAProgramsOwnErrorIsNotRetriedForItsWords(t *testing.T) {
	for _, line := range []string{
		`ValueError: invalid timeout: -1 (want a positive number of seconds)`,
		`KeyError: 'connection'`,
		`TypeError: request() got an unexpected keyword argument 'timeout'`,
		`json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)`,
		`FileNotFoundError: [Errno 2] No such file or directory: 'timeouts.csv'`,
		`pydantic_core._pydantic_core.ValidationError: 1 validation error for Config\ntimeout\n  Input should be a valid integer`,
	} {
		for form, stderr := range map[string]string{"traceback": pyTraceback(line), "alone": line + "\n"} {
			if got, want := Classify(&exitErr{code: 1, stderr: stderr}), (Decision{Item, "exit 1"}); got != want {
				t.Errorf("%s, %s: classified %v, want %v", form, line, got, want)
			}
		}
	}
}

// TestAnUnknownExceptionIsReadByItsMessage: an exception tenax does not
// know (the program's own) is the program's account of the failure, so
// its message's status or signal phrase decides; the traceback's frames
// never do.
func TestAnUnknownExceptionIsReadByItsMessage(t *testing.T) {
	tests := []struct {
		stderr string
		want   Decision
	}{
		{pyTraceback("review.errors.UpstreamError: upstream said 503 Service Unavailable"), Decision{Retryable, "exit 1, stderr status 503"}},
		{pyTraceback("Exception: fetch failed: Connection reset by peer"), Decision{Retryable, `exit 1, stderr keyword "connection reset"`}},
		{pyTraceback("RuntimeError: review failed for item 7"), Decision{Item, "exit 1"}},
		{"Error: getaddrinfo EAI_AGAIN api.anthropic.com\n", Decision{Retryable, `exit 1, stderr keyword "EAI_AGAIN"`}},
	}
	for _, tt := range tests {
		if got := Classify(&exitErr{code: 1, stderr: tt.stderr}); got != tt.want {
			t.Errorf("stderr\n%s\nclassified %v, want %v", tt.stderr, got, tt.want)
		}
	}
}

func TestParseExceptionLine(t *testing.T) {
	tests := []struct {
		line string
		want exceptionLine
		ok   bool
	}{
		{"httpx.PoolTimeout", exceptionLine{Name: "httpx.PoolTimeout", Class: "PoolTimeout"}, true},
		{"  KeyError: 'x'  ", exceptionLine{Name: "KeyError", Class: "KeyError", Message: "'x'"}, true},
		{"socket.timeout: timed out", exceptionLine{Name: "socket.timeout", Class: "timeout", Message: "timed out"}, true},
		{"openai.RateLimitError:", exceptionLine{Name: "openai.RateLimitError", Class: "RateLimitError"}, true},
		{"curl: (7) Failed to connect", exceptionLine{}, false},
		{"ssh: connect to host x port 22: No route to host", exceptionLine{}, false},
		{"Traceback (most recent call last):", exceptionLine{}, false},
		{"requests.: x", exceptionLine{}, false},
		{".Error: x", exceptionLine{}, false},
		{"9Error: x", exceptionLine{}, false},
		{"AssertionError [ERR_ASSERTION]: x", exceptionLine{}, false},
		{"", exceptionLine{}, false},
	}
	for _, tt := range tests {
		got, ok := parseExceptionLine(tt.line)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseExceptionLine(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func TestStatusIn(t *testing.T) {
	tests := []struct {
		text    string
		leading bool
		want    int
	}{
		{"Error code: 429 - {'error': {}}", false, 429},
		{"HTTP Error 503: Service Unavailable", false, 503},
		{"curl: (22) The requested URL returned error: 503", false, 503},
		{"Request failed with status code 502", false, 502},
		{"< HTTP/1.1 504 Gateway Time-out", false, 504},
		{"wget: ERROR 503: Service Unavailable.", false, 503},
		{"got 429 too many requests from upstream", false, 429},
		{"429 Client Error: Too Many Requests for url: https://x", false, 429},
		{"429, message='Too Many Requests'", true, 429},
		{"429, message='Too Many Requests'", false, 0},
		{"503 items processed", true, 503},
		{"503 items processed", false, 0},
		{"processed 5030 Service Unavailable", false, 0},
		{"v1.503 Service Unavailable", false, 0},
		{"Error code: 4290", false, 0},
		{"Error code: 700", false, 0},
		{"", true, 0},
	}
	for _, tt := range tests {
		if got := statusIn(tt.text, tt.leading); got != tt.want {
			t.Errorf("statusIn(%q, %v) = %d, want %d", tt.text, tt.leading, got, tt.want)
		}
	}
}

func TestProviderCodeIn(t *testing.T) {
	tests := []struct{ text, want string }{
		{`{'error': {'type': 'insufficient_quota', 'code': 'insufficient_quota'}}`, "insufficient_quota"},
		{`{'error': {'type': 'tokens', 'param': None, 'code': 'rate_limit_exceeded'}}`, "rate_limit_exceeded"},
		{`{'error': {'type': 'server_error', 'param': None, 'code': None}}`, "server_error"},
		{`{'type': 'error', 'error': {'type': 'overloaded_error', 'message': 'Overloaded'}}`, "overloaded_error"},
		{`{"type":"error","error":{"type":"rate_limit_error","details":{"error_code":"enforced_spend_limit_reached"}}}`, "enforced_spend_limit_reached"},
		{`{"type": "error", "error": {"type": "rate_limit_error", "details": {"error_code": "enforced_spend_limit_reached"}}}`, "enforced_spend_limit_reached"},
		{`You exceeded your current quota, please check your plan`, "insufficient_quota"},
		{`{'error': {'code': 429, 'status': 'RESOURCE_EXHAUSTED'}}`, ""},
		{`{'code': '`, ""},
	}
	for _, tt := range tests {
		if got := providerCodeIn(tt.text); got != tt.want {
			t.Errorf("providerCodeIn(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}
