package spec

import (
	"cmp"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// A spec's error shows the value it is about, but a value that came from
// the environment may be a secret written into the wrong key
// (retry.max_attempts: ${API_TOKEN}): the error names the variable instead,
// and a URL's password and query values are never shown at all.

// shown is what an error about the value at path shows of it: literal, as
// the caller would show a value the file wrote, or, when the value came
// from ${VAR} expansion, the text the spec wrote, quoted ("${API_TOKEN}"),
// which names the variable and holds no secret of its own.
func (d *decoder) shown(path, literal string) string {
	if written, ok := d.written[path]; ok {
		return quote(written)
	}
	return literal
}

// scrubbed returns the errors with every value that came from ${VAR}
// expansion replaced by the variable's name, as it is written in the spec:
// the rule shown applies where an error is built, this is the net under
// every error that quotes a value another way (a path, a name). Values
// under minSecretLen are left: they cannot be secrets, and replacing one
// would mangle words that contain it.
func (d *decoder) scrubbed(errs Errors) Errors {
	type replacement struct{ from, to string }
	var reps []replacement
	for _, e := range d.expanded {
		if len(e.value) < minSecretLen {
			continue
		}
		ref := "${" + e.name + "}"
		// The forms a message may hold: quoted (possibly cut short),
		// escaped inside another quoted string, and as it is.
		reps = append(reps,
			replacement{quote(e.value), quote(ref)},
			replacement{quoteBare(e.value), ref},
			replacement{e.value, ref})
	}
	if len(reps) == 0 {
		return errs
	}
	// Longest first, so that a value is replaced before any value inside it.
	slices.SortStableFunc(reps, func(a, b replacement) int { return cmp.Compare(len(b.from), len(a.from)) })
	scrub := func(s string) string {
		for _, r := range reps {
			s = strings.ReplaceAll(s, r.from, r.to)
		}
		return s
	}
	for _, e := range errs {
		e.Msg, e.Suggestion = scrub(e.Msg), scrub(e.Suggestion)
	}
	return errs
}

// result is the decoder's errors as Parse returns them: secrets scrubbed,
// in file order, capped.
func (d *decoder) result() Errors {
	return d.scrubbed(d.errs).sorted().capped()
}

// checkBaseURL refuses a base_url at path that is not an absolute http or
// https URL: one that did not parse was accepted by validate and failed
// every call of the run, its error printing the URL's password and query.
// The error shows the URL with those redacted.
func (d *decoder) checkBaseURL(path, raw string) {
	if raw == "" {
		return
	}
	why := ""
	u, err := url.Parse(raw)
	var ue *url.Error
	switch {
	case errors.As(err, &ue):
		why = ue.Err.Error()
	case err != nil:
		why = "it does not parse"
	case u.Scheme != "http" && u.Scheme != "https":
		why = "it needs http:// or https://"
	case u.Host == "":
		why = "it names no host"
	default:
		return
	}
	shown := raw
	if written, ok := d.written[path]; ok {
		shown = written
	}
	redacted := redactURL(shown)
	// The parser's reason may quote a piece of the URL (a port, an
	// escape, a character), cut where the parser cut it: keep it only
	// when that piece overlaps no redacted part.
	if _, piece, found := strings.Cut(why, `"`); found {
		piece, _, _ = strings.Cut(piece, `"`)
		piece = strings.TrimLeft(piece, ":")
		// The parts of the value parsed, too: a URL from ${VAR} is shown
		// as the variable, but the parser saw its value.
		for _, part := range append(urlSecretParts(shown), urlSecretParts(raw)...) {
			if part != "" && piece != "" && (strings.Contains(part, piece) || strings.Contains(piece, part)) {
				why = "it does not parse"
				break
			}
		}
	}
	d.problem(path, nil, "%s is not an absolute http(s) URL: %s (want e.g. https://api.example.com/v1)", strconv.Quote(redacted), why)
}

// rawURL is a URL split on its text, as url.Parse cannot be trusted to
// find the parts of a URL it refuses.
type rawURL struct {
	scheme, user, password, hostPath, query, fragment string
	hasPassword, hasQuery, hasFragment                bool
}

// splitURL splits raw, a URL that may not parse. Userinfo ends at the last
// @ before the query: a password may hold a / or a # (unescaped, which is
// what makes such a URL unparseable).
func splitURL(raw string) rawURL {
	var u rawURL
	rest := raw
	if scheme, after, found := strings.Cut(raw, "://"); found {
		u.scheme, rest = scheme+"://", after
	}
	head, query, hasQuery := strings.Cut(rest, "?")
	if at := strings.LastIndexByte(head, '@'); at >= 0 {
		u.user, u.password, u.hasPassword = strings.Cut(head[:at], ":")
		u.user += "@"
		head = head[at+1:]
	}
	if hasQuery {
		u.hasQuery = true
		u.query, u.fragment, u.hasFragment = strings.Cut(query, "#")
		u.hostPath = head
	} else {
		u.hostPath, u.fragment, u.hasFragment = strings.Cut(head, "#")
	}
	return u
}

// redactURL returns raw, a URL that may not parse, with its userinfo's
// password, its query values and its fragment replaced by "[redacted]".
func redactURL(raw string) string {
	u := splitURL(raw)
	out := u.scheme
	if u.user != "" {
		user := strings.TrimSuffix(u.user, "@")
		if u.hasPassword {
			user += ":" + redactedText
		}
		out += user + "@"
	}
	out += u.hostPath
	if u.hasQuery {
		params := strings.Split(u.query, "&")
		for i, p := range params {
			if k, v, ok := strings.Cut(p, "="); ok && v != "" {
				params[i] = k + "=" + redactedText
			}
		}
		out += "?" + strings.Join(params, "&")
	}
	if u.hasFragment && u.fragment != "" {
		out += "#" + redactedText
	}
	return out
}

// urlSecretParts returns the parts of raw that redactURL hides.
func urlSecretParts(raw string) []string {
	u := splitURL(raw)
	parts := []string{u.password, u.fragment}
	for p := range strings.SplitSeq(u.query, "&") {
		if _, v, ok := strings.Cut(p, "="); ok {
			parts = append(parts, v)
		}
	}
	return parts
}
