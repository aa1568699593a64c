package classify

import "strings"

// exceptionLine is a line as Python prints the exception that ends a
// traceback: the class's qualified name, then ": " and the message
// ("requests.exceptions.ReadTimeout: HTTPSConnectionPool(...): Read timed
// out."), or the name alone for an exception raised without one
// ("httpx.PoolTimeout"). Scripts that print f"{type(e).__name__}: {e}"
// give the same shape with a bare class name.
type exceptionLine struct {
	// Name is the class as printed: "openai.RateLimitError".
	Name string
	// Class is Name's last part: "RateLimitError".
	Class string
	// Message is what follows ": ", "" for none.
	Message string
}

// parseExceptionLine reads line as an exception line. The name must be a
// dotted Python identifier whose last part starts with a capital letter,
// as exception classes are named, unless the name is one of the known
// lower-case ones (socket.timeout, socket.gaierror); "curl: (7) …" and
// "ssh: connect to host …" are not exceptions.
func parseExceptionLine(line string) (exceptionLine, bool) {
	s := strings.TrimSpace(line)
	i, lastDot := 0, -1
	for {
		if i >= len(s) || !isIdentStart(s[i]) {
			return exceptionLine{}, false
		}
		for i < len(s) && isWordByte(s[i]) {
			i++
		}
		if i < len(s) && s[i] == '.' {
			lastDot = i
			i++
			continue
		}
		break
	}
	ex := exceptionLine{Name: s[:i], Class: s[lastDot+1 : i]}
	switch rest := s[i:]; {
	case rest == "" || rest == ":":
	case strings.HasPrefix(rest, ": "):
		ex.Message = strings.TrimSpace(rest[2:])
	default:
		return exceptionLine{}, false
	}
	if c := ex.Class[0]; c < 'A' || c > 'Z' {
		if _, ok := exceptionKinds[ex.Name]; !ok {
			return exceptionLine{}, false
		}
	}
	return ex, true
}

func isIdentStart(c byte) bool {
	return c == '_' || 'a' <= lowerASCII(c) && lowerASCII(c) <= 'z'
}

// exceptionKind is what an exception class says about a failure.
type exceptionKind struct {
	// class is the class it decides by itself; Unknown when only its
	// message can decide (an HTTPError without a status) or, with plain,
	// when nothing can.
	class Class
	// status is the HTTP status the class stands for when its message
	// names none (openai.RateLimitError is a 429).
	status int
	// reads says what of the message refines the class.
	reads reading
	// plain marks the classes of a program's own mistakes (ValueError,
	// KeyError, …): their messages are the program's words about its
	// data, and a "timeout" in "ValueError: invalid timeout" is no
	// signal.
	plain bool
}

// reading is a set of the ways an exception's message refines its class.
type reading uint8

const (
	// readStatus: an HTTP status and a provider code in the message
	// ("Error code: 429 - {... 'code': 'insufficient_quota' ...}") decide
	// as a response's status and code do.
	readStatus reading = 1 << iota
	// readAWSCode: botocore's "An error occurred (ThrottlingException)"
	// decides by AWS's error code.
	readAWSCode
	// readNetwork: a name that does not resolve or a certificate that
	// does not verify makes a connection failure fatal: no retry can
	// help.
	readNetwork
)

var (
	network   = exceptionKind{class: Retryable, reads: readNetwork}
	fatalKind = exceptionKind{class: Fatal}
	plainKind = exceptionKind{plain: true}
)

func byStatusKind(class Class, status int) exceptionKind {
	return exceptionKind{class: class, status: status, reads: readStatus}
}

// exceptionKinds are the exception classes of Python, its standard library
// and the common HTTP clients and SDKs (requests, urllib3, httpx, httpcore,
// aiohttp, botocore, openai, anthropic), by class name or, for the
// lower-case ones, by qualified name. One class name often serves several
// libraries (ConnectTimeout is requests' and httpx's), so the name decides
// whatever module prints it. docs/classes.md lists them.
var exceptionKinds = map[string]exceptionKind{
	// Python's own connection errors and the standard library's.
	"ConnectionError":          network,
	"ConnectionResetError":     network,
	"ConnectionRefusedError":   network,
	"ConnectionAbortedError":   network,
	"BrokenPipeError":          network,
	"TimeoutError":             network, // asyncio's and concurrent.futures' too
	"socket.timeout":           network,
	"socket.gaierror":          network,
	"RemoteDisconnected":       network, // http.client
	"IncompleteRead":           network, // http.client, urllib3
	"URLError":                 network, // urllib.error
	"SSLError":                 network, // ssl, requests, urllib3, botocore
	"SSLEOFError":              network,
	"SSLZeroReturnError":       network,
	"SSLCertVerificationError": fatalKind,

	// requests.
	"ConnectTimeout":       network, // also httpx
	"ReadTimeout":          network, // also httpx
	"Timeout":              network, // also openai 0.x (openai.error.Timeout)
	"ChunkedEncodingError": network,
	"ProxyError":           network, // also urllib3, httpx
	// By its qualified name: tenacity's RetryError is a wrapper that its
	// cause decides.
	"requests.exceptions.RetryError": network,
	"HTTPError":                      byStatusKind(Unknown, 0), // also urllib.error

	// urllib3.
	"MaxRetryError":       network,
	"ProtocolError":       network,
	"ReadTimeoutError":    network, // also botocore
	"ConnectTimeoutError": network, // also botocore
	"NewConnectionError":  network,
	"NameResolutionError": network,
	"InvalidChunkLength":  network,
	"ResponseError":       network,

	// httpx and httpcore.
	"ConnectError":        network,
	"WriteTimeout":        network,
	"PoolTimeout":         network,
	"TimeoutException":    network,
	"ReadError":           network,
	"WriteError":          network,
	"NetworkError":        network,
	"RemoteProtocolError": network,
	"TransportError":      network,
	"HTTPStatusError":     byStatusKind(Unknown, 0),

	// aiohttp.
	"ClientConnectorError":            network,
	"ClientConnectorDNSError":         network,
	"ClientConnectionError":           network,
	"ClientConnectionResetError":      network,
	"ClientOSError":                   network,
	"ClientProxyConnectionError":      network,
	"ClientConnectorSSLError":         network,
	"ClientSSLError":                  network,
	"ClientPayloadError":              network,
	"ServerDisconnectedError":         network,
	"ServerConnectionError":           network,
	"ServerTimeoutError":              network,
	"ConnectionTimeoutError":          network,
	"SocketTimeoutError":              network,
	"ClientConnectorCertificateError": fatalKind,
	"ClientResponseError":             byStatusKind(Unknown, 0),

	// botocore.
	"EndpointConnectionError":   network,
	"ConnectionClosedError":     network,
	"HTTPClientError":           network,
	"ProxyConnectionError":      network,
	"ResponseStreamingError":    network,
	"IncompleteReadError":       network,
	"NoCredentialsError":        fatalKind,
	"PartialCredentialsError":   fatalKind,
	"CredentialRetrievalError":  fatalKind,
	"NoRegionError":             fatalKind,
	"ProfileNotFound":           fatalKind,
	"UnauthorizedSSOTokenError": fatalKind,
	"SSOTokenLoadError":         fatalKind,
	"TokenRetrievalError":       fatalKind,
	// ClientError is botocore's for every AWS error code, and
	// google-genai's for a 4xx ("429 RESOURCE_EXHAUSTED. {...}").
	"ClientError": {reads: readAWSCode | readStatus},
	"ServerError": byStatusKind(Retryable, 500),

	// openai and anthropic (1.x: "openai.RateLimitError: Error code: 429 -
	// {...}"; openai 0.x: "openai.error.RateLimitError: ...").
	"APIConnectionError":       network,
	"APITimeoutError":          network,
	"TryAgain":                 network,
	"APIError":                 byStatusKind(Retryable, 0), // a stream's error event, 0.x's 5xx
	"APIStatusError":           byStatusKind(Unknown, 0),
	"BadRequestError":          byStatusKind(Item, 400),
	"InvalidRequestError":      byStatusKind(Item, 400),
	"AuthenticationError":      byStatusKind(Fatal, 401),
	"PermissionDeniedError":    byStatusKind(Fatal, 403),
	"NotFoundError":            byStatusKind(Item, 404),
	"ConflictError":            byStatusKind(Retryable, 409),
	"UnprocessableEntityError": byStatusKind(Item, 422),
	"FailedDependencyError":    byStatusKind(Item, 424),
	"RateLimitError":           byStatusKind(Retryable, 429),
	"InternalServerError":      byStatusKind(Retryable, 500),
	"ServiceUnavailableError":  byStatusKind(Retryable, 503),
	"DeadlineExceededError":    byStatusKind(Retryable, 504),
	"OverloadedError":          byStatusKind(Retryable, 529),

	// A program's own mistakes.
	"ValueError":          plainKind,
	"TypeError":           plainKind,
	"KeyError":            plainKind,
	"IndexError":          plainKind,
	"LookupError":         plainKind,
	"AttributeError":      plainKind,
	"NameError":           plainKind,
	"UnboundLocalError":   plainKind,
	"ZeroDivisionError":   plainKind,
	"OverflowError":       plainKind,
	"RecursionError":      plainKind,
	"NotImplementedError": plainKind,
	"UnicodeDecodeError":  plainKind,
	"UnicodeEncodeError":  plainKind,
	"JSONDecodeError":     plainKind,
	"SyntaxError":         plainKind,
	"IndentationError":    plainKind,
	"FileNotFoundError":   plainKind,
	"IsADirectoryError":   plainKind,
	"NotADirectoryError":  plainKind,
	"FileExistsError":     plainKind,
	"PermissionError":     plainKind,
	"ValidationError":     plainKind, // pydantic, jsonschema
}

// awsCodes are the classes of AWS error codes. The retryable ones are
// botocore's own standard-mode list (throttling and transient codes) and
// the service errors AWS documents as worth retrying.
var awsCodes = map[string]Class{
	"RequestTimeout":                         Retryable,
	"RequestTimeoutException":                Retryable,
	"PriorRequestNotComplete":                Retryable,
	"Throttling":                             Retryable,
	"ThrottlingException":                    Retryable,
	"ThrottledException":                     Retryable,
	"RequestThrottledException":              Retryable,
	"TooManyRequestsException":               Retryable,
	"ProvisionedThroughputExceededException": Retryable,
	"TransactionInProgressException":         Retryable,
	"RequestLimitExceeded":                   Retryable,
	"BandwidthLimitExceeded":                 Retryable,
	"LimitExceededException":                 Retryable,
	"RequestThrottled":                       Retryable,
	"SlowDown":                               Retryable,
	"EC2ThrottledException":                  Retryable,
	"InternalServerException":                Retryable,
	"InternalServerError":                    Retryable,
	"InternalFailure":                        Retryable,
	"InternalError":                          Retryable,
	"ServiceUnavailable":                     Retryable,
	"ServiceUnavailableException":            Retryable,
	"ModelTimeoutException":                  Retryable,
	"ModelNotReadyException":                 Retryable,
	"AccessDenied":                           Fatal,
	"AccessDeniedException":                  Fatal,
	"UnrecognizedClientException":            Fatal,
	"InvalidClientTokenId":                   Fatal,
	"InvalidAccessKeyId":                     Fatal,
	"ExpiredToken":                           Fatal,
	"ExpiredTokenException":                  Fatal,
	"InvalidSignatureException":              Fatal,
	"SignatureDoesNotMatch":                  Fatal,
	"AuthFailure":                            Fatal,
	"UnauthorizedOperation":                  Fatal,
	"MissingAuthenticationToken":             Fatal,
	"MissingAuthenticationTokenException":    Fatal,
	"ValidationException":                    Item,
}

// kind returns the exception's kind, and false for a class tenax does not
// know.
func (ex exceptionLine) kind() (exceptionKind, bool) {
	if k, ok := exceptionKinds[ex.Name]; ok {
		return k, true
	}
	if k, ok := exceptionKinds[ex.Class]; ok {
		return k, true
	}
	if strings.Contains(ex.Name, ".errorfactory.") {
		// boto3 makes a class per AWS error code at run time.
		return exceptionKind{reads: readAWSCode}, true
	}
	return exceptionKind{}, false
}

// decide classifies a known exception by its class and what its message
// adds. ok is false when the class is unknown or, known, says nothing by
// itself and its message names no status or code either.
func (ex exceptionLine) decide() (d Decision, kind exceptionKind, ok bool) {
	kind, known := ex.kind()
	if !known {
		return Decision{}, kind, false
	}
	by := "exception " + ex.Name
	if kind.reads&readAWSCode != 0 {
		if code := ex.awsCode(); code != "" {
			if c := awsCodes[code]; c != Unknown {
				return Decision{Class: c, Reason: by + ", code " + code}, kind, true
			}
		}
	}
	if kind.reads&readStatus != 0 {
		s := &statusLine{line: ex.Message, status: statusIn(ex.Message, true), code: providerCodeIn(ex.Message)}
		if s.status == 0 {
			s.status = kind.status
		}
		if d, ok := byStatus(s); ok {
			return Decision{Class: d.Class, Reason: by + ", " + d.Reason}, kind, true
		}
	}
	if kind.reads&readNetwork != 0 {
		if why := unrecoverableConnection(ex.Message); why != "" {
			return Decision{Class: Fatal, Reason: by + ", " + why}, kind, true
		}
	}
	if kind.class == Unknown {
		return Decision{}, kind, false
	}
	return Decision{Class: kind.class, Reason: by}, kind, true
}

// awsCode returns the AWS error code botocore names in "An error occurred
// (ThrottlingException) when calling …", or, for the classes boto3 makes
// per code (botocore.errorfactory.ThrottlingException), the class's name.
func (ex exceptionLine) awsCode() string {
	const open = "An error occurred ("
	if i := strings.Index(ex.Message, open); i >= 0 {
		rest := ex.Message[i+len(open):]
		if j := strings.IndexByte(rest, ')'); j > 0 {
			return rest[:j]
		}
	}
	if strings.Contains(ex.Name, ".errorfactory.") {
		return ex.Class
	}
	return ""
}

// unrecoverableConnection names why a failed connection cannot succeed on
// a new attempt: the host name does not exist (as a *net.DNSError that is
// not found is fatal for Go's own calls), or the server's certificate
// does not verify. "" for a failure worth retrying.
func unrecoverableConnection(msg string) string {
	for _, p := range [...]string{
		"Name or service not known",           // glibc's EAI_NONAME
		"nodename nor servname provided",      // macOS's
		"No address associated with hostname", // EAI_NODATA
		"getaddrinfo ENOTFOUND",               // Node's
		"Could not resolve host",              // curl's
		"[Errno 11001] getaddrinfo failed",    // Windows'
	} {
		// "Temporary failure in name resolution" (EAI_AGAIN) is not
		// here: a resolver that could not answer may answer next time.
		if indexFold(msg, p, false) >= 0 {
			return "DNS not found"
		}
	}
	if indexFold(msg, "CERTIFICATE_VERIFY_FAILED", false) >= 0 || indexFold(msg, "certificate verify failed", false) >= 0 {
		return "certificate verify failed"
	}
	return ""
}
