package robots

import "strings"

// The AI-usage preferences and agent names that reach robotsgate outside a
// robots.txt file (in HTTP response headers and HTML meta tags) are read
// with robots.txt's own rules, so that a preference means the same thing
// wherever a site states it.

// ParseContentUsage reads the value of a Content-Usage response header
// field (IETF aipref, a structured-field dictionary such as
// "train-ai=n, search=y") as the preferences of a robots.txt Content-Usage
// line without a path: names and values lower-cased and trimmed, entries
// without "=" skipped. Parameters (";…" after a value) are ignored and a
// quoted value ("n") counts as the token. Line is 0.
func ParseContentUsage(value string) []Pref {
	var out []Pref
	for len(value) > 0 {
		var item string
		item, value, _ = strings.Cut(value, ",")
		item, _, _ = strings.Cut(item, ";")
		name, v, ok := strings.Cut(item, "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		out = appendPrefs(out, []byte(name+"="+v), 0)
	}
	return out
}

// NamesAgent reports whether token, an agent name as a site writes it
// ("FooBot" in "X-Robots-Tag: FooBot: noai" or <meta name="FooBot">),
// names the agent userAgent (a User-Agent header or a fixed product
// token) by the rules GroupForUserAgent applies to user-agent lines: token
// must be a product token ([A-Za-z_-]+), and one of the runs of [A-Za-z_-]
// in userAgent must equal it, ignoring ASCII case ("Mozilla/5.0
// (compatible; FooBot/2.1)" is named by "foobot").
func NamesAgent(userAgent, token string) bool {
	if token == "" || tokenLen(token) != len(token) {
		return false
	}
	for i := 0; i < len(userAgent); {
		if !isTokenChar(userAgent[i]) {
			i++
			continue
		}
		start := i
		for i < len(userAgent) && isTokenChar(userAgent[i]) {
			i++
		}
		if i-start == len(token) && strings.EqualFold(userAgent[start:i], token) {
			return true
		}
	}
	return false
}
