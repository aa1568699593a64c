package task

import (
	"html"
	"strings"
	"unicode/utf8"
)

// PageText is the readable text of an error page a server or a proxy in
// front of it sent (an nginx 502, a gateway's login page): tags, scripts
// and styles stripped, entities decoded, whitespace folded, cut at max
// characters with "…". A record keeps what the page says ("upstream
// connect error … nginx") rather than its first line, which for HTML is
// "<!DOCTYPE html>".
func PageText(body []byte, max int) string {
	text := string(body)
	var b strings.Builder
	for len(text) > 0 {
		lt := strings.IndexByte(text, '<')
		if lt < 0 {
			b.WriteString(text)
			break
		}
		b.WriteString(text[:lt])
		b.WriteByte(' ')
		text = text[lt:]
		for _, skip := range []string{"script", "style"} {
			if len(text) > len(skip) && strings.EqualFold(text[1:1+len(skip)], skip) {
				if end := strings.Index(strings.ToLower(text), "</"+skip); end >= 0 {
					text = text[end:]
				}
			}
		}
		gt := strings.IndexByte(text, '>')
		if gt < 0 {
			break
		}
		text = text[gt+1:]
	}
	folded := strings.Join(strings.Fields(html.UnescapeString(b.String())), " ")
	if utf8.RuneCountInString(folded) <= max {
		return folded
	}
	r := []rune(folded)
	return string(r[:max]) + "…"
}

// IsPage reports whether an error body is an HTML page rather than text
// or JSON: its content type says so, or its text begins with a tag.
func IsPage(contentType string, body []byte) bool {
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(contentType)), "text/html") {
		return true
	}
	s := strings.TrimSpace(string(body[:min(len(body), 512)]))
	return strings.HasPrefix(s, "<")
}
