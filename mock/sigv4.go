package mock

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// verifySigV4 checks a Bedrock request's SigV4 signature against the
// secret of its access key id in Config.AWSCredentials, as AWS does: the
// canonical request (method, the path escaped again, the sorted query,
// the signed headers, the body's SHA-256) hashed into the string to sign
// and HMAC-ed with the key derived from the secret, the date, the region
// and the service. nil when the mock was given no credentials (it then
// takes any signed request), or the signature is right; otherwise the
// 403 AWS answers: an unknown key id, a signature that does not match, a
// scope for another region than Config.AWSRegion.
func verifySigV4(x *exchange) *apiError {
	creds := x.s.cfg.AWSCredentials
	if len(creds) == 0 {
		return nil
	}
	auth, _ := strings.CutPrefix(x.r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	fields := map[string]string{}
	for f := range strings.SplitSeq(auth, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/") // AKID/date/region/service/aws4_request
	secret, known := creds[scope[0]]
	if !known || len(scope) != 5 {
		e := x.d.errs[errBadKey](x)
		return &e
	}
	date, region, service := scope[1], scope[2], scope[3]
	if want := x.s.cfg.AWSRegion; want != "" && region != want {
		e := bedrockError(403, "InvalidSignatureException", fmt.Sprintf("Credential should be scoped to a valid region, not '%s'. ", region), cAuthErrors)
		return &e
	}
	canonical := canonicalRequest(x, strings.Split(fields["SignedHeaders"], ";"))
	toSign := strings.Join([]string{"AWS4-HMAC-SHA256", x.r.Header.Get("X-Amz-Date"),
		strings.Join(scope[1:], "/"), hexSHA256([]byte(canonical))}, "\n")
	key := []byte("AWS4" + secret)
	for _, part := range []string{date, region, service, "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	want := hex.EncodeToString(hmacSHA256(key, toSign))
	if !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		e := bedrockError(403, "InvalidSignatureException", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.", cAuthErrors)
		return &e
	}
	return nil
}

// canonicalRequest is SigV4's canonical form of the exchange's request
// over the headers it signed.
func canonicalRequest(x *exchange, signed []string) string {
	r := x.r
	var headers strings.Builder
	for _, h := range signed {
		var v string
		switch h {
		case "host":
			v = cmp.Or(r.Host, r.URL.Host)
		case "content-length":
			v = strconv.FormatInt(r.ContentLength, 10)
		default:
			vals := r.Header.Values(h)
			for i, s := range vals {
				vals[i] = strings.Join(strings.Fields(s), " ")
			}
			v = strings.Join(vals, ",")
		}
		headers.WriteString(h + ":" + v + "\n")
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		payload = hexSHA256(x.body)
	}
	return strings.Join([]string{r.Method, escapeSigV4(cmp.Or(r.URL.EscapedPath(), "/")), canonicalQuery(r.URL.Query()),
		headers.String(), strings.Join(signed, ";"), payload}, "\n")
}

// canonicalQuery is the query sorted by key and value, each escaped as
// SigV4 escapes them.
func canonicalQuery(q url.Values) string {
	var pairs []string
	for k, vs := range q {
		for _, v := range vs {
			pairs = append(pairs, escapeSigV4(k)+"="+escapeSigV4(v))
		}
	}
	slices.Sort(pairs)
	return strings.Join(pairs, "&")
}

// escapeSigV4 escapes every byte but the unreserved ones and '/', as
// SigV4 (and AWS's SDKs) do: on an already escaped path, a second time.
func escapeSigV4(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func hexSHA256(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}
