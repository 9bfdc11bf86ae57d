// Package pac writes a proxy auto-config (PAC) file: the JavaScript
// function FindProxyForURL that browsers and PAC-aware tools run to choose
// a proxy per URL (Netscape's Navigator 2.0 proxy auto-config, as every
// browser implements it). robotsgate's admin listener serves it at
// /proxy.pac, so that a company rolls robotsgate out by pointing its
// browsers' automatic proxy configuration at one URL.
//
// The file sends every URL to the proxy, except the hosts of a list of
// globs (upstream.no_proxy), which go DIRECT. It never falls back to
// DIRECT when the proxy is down: a compliance gateway that clients skip
// when it fails checks nothing.
package pac

import (
	"encoding/json"
	"fmt"
	"strings"
)

// File returns the PAC file that sends every URL to the proxy at proxy
// (host:port), and URLs whose host matches one of direct (path.Match
// globs, matched against the lower-case host without a trailing dot, as
// the proxy matches upstream.no_proxy) DIRECT.
func File(proxy string, direct []string) []byte {
	var b strings.Builder
	b.WriteString("// Proxy auto-config of robotsgate: every URL goes through the proxy, but\n" +
		"// the hosts of upstream.no_proxy, which go DIRECT. There is no DIRECT\n" +
		"// fallback: when the proxy cannot be reached, requests fail.\n")
	b.WriteString("function FindProxyForURL(url, host) {\n")
	b.WriteString("  host = host.toLowerCase();\n")
	b.WriteString("  if (host.charAt(host.length - 1) == \".\") {\n    host = host.substring(0, host.length - 1);\n  }\n")
	b.WriteString("  var direct = [\n")
	for _, glob := range direct {
		fmt.Fprintf(&b, "    %s, // %s\n", jsString("^(?:"+globRegexp(strings.ToLower(glob))+")$"), commentSafe(glob))
	}
	b.WriteString("  ];\n")
	b.WriteString("  for (var i = 0; i < direct.length; i++) {\n")
	b.WriteString("    if (new RegExp(direct[i]).test(host)) {\n      return \"DIRECT\";\n    }\n  }\n")
	fmt.Fprintf(&b, "  return %s;\n}\n", jsString("PROXY "+proxy))
	return []byte(b.String())
}

// globRegexp translates a path.Match pattern into a regular expression
// that matches the same strings: '*' any run of characters but '/', '?'
// one such character, '[...]' a class ('^' negating it), '\' quoting the
// next character. A host has no '/', so '*' spans dots as path.Match's
// does. The pattern is valid (config validates it); a trailing '\' or an
// unclosed class matches itself literally.
func globRegexp(glob string) string {
	var re strings.Builder
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '*':
			re.WriteString("[^/]*")
		case '?':
			re.WriteString("[^/]")
		case '\\':
			if i+1 < len(glob) {
				i++
				re.WriteString(quoteMeta(glob[i]))
			} else {
				re.WriteString(`\\`)
			}
		case '[':
			end := classEnd(glob, i)
			if end < 0 {
				re.WriteString(`\[`)
				continue
			}
			re.WriteString(class(glob[i+1 : end]))
			i = end
		default:
			re.WriteString(quoteMeta(c))
		}
	}
	return re.String()
}

// classEnd returns the index of the ']' that closes the class opened at
// glob[start], -1 when none does.
func classEnd(glob string, start int) int {
	i := start + 1
	if i < len(glob) && glob[i] == '^' {
		i++
	}
	for ; i < len(glob); i++ {
		switch glob[i] {
		case '\\':
			i++
		case ']':
			return i
		}
	}
	return -1
}

// class translates the inside of a path.Match class: ranges stay, the
// characters special in a JavaScript class are quoted, '^' first negates
// (and never matches '/').
func class(inner string) string {
	var re strings.Builder
	re.WriteString("[")
	if strings.HasPrefix(inner, "^") {
		re.WriteString("^/")
		inner = inner[1:]
	}
	for i := 0; i < len(inner); i++ {
		switch c := inner[i]; {
		case c == '\\' && i+1 < len(inner):
			i++
			re.WriteString(classChar(inner[i]))
		case c == '-':
			re.WriteByte('-') // a range, as in path.Match
		default:
			re.WriteString(classChar(c))
		}
	}
	re.WriteString("]")
	return re.String()
}

// classChar quotes a byte for a JavaScript character class.
func classChar(c byte) string {
	if strings.IndexByte(`\]^[-`, c) >= 0 {
		return `\` + string(c)
	}
	return string(c)
}

// quoteMeta quotes a byte for a JavaScript regular expression.
func quoteMeta(c byte) string {
	if strings.IndexByte(`\^$.|?*+()[]{}/-`, c) >= 0 {
		return `\` + string(c)
	}
	return string(c)
}

// jsString is s as a JavaScript string literal: JSON's, which JavaScript
// reads alike (U+2028 and U+2029 escaped too).
func jsString(s string) string {
	q, _ := json.Marshal(s) // a string always marshals
	return string(q)
}

// commentSafe keeps a glob from ending its line comment.
func commentSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}
