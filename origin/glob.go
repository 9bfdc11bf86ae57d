package origin

import (
	"fmt"
	"path"
	"strings"
)

// globMeta are the characters that make a host pattern a glob
// (path.Match syntax).
const globMeta = `*?[\`

// CanonicalGlob returns a host glob (path.Match syntax, e.g.
// "*.bücher.example.") spelled as CanonicalHost spells hosts, so that it
// matches them: lower case, no trailing dot, non-ASCII labels in punycode
// ("*.xn--bcher-kva.example"). The error says what is wrong: a character no
// host has, a malformed pattern, a non-ASCII label that is itself a glob
// (write it in punycode) or is no valid label.
func CanonicalGlob(s string) (string, error) {
	g := strings.ToLower(strings.TrimSuffix(s, "."))
	if !isASCII(g) {
		labels := strings.Split(g, ".")
		for i, label := range labels {
			if isASCII(label) {
				continue
			}
			if strings.ContainsAny(label, globMeta+"]") {
				return "", fmt.Errorf("%q: write a glob's non-ASCII labels in punycode (xn--...)", s)
			}
			ascii, err := CanonicalHost(label)
			if err != nil {
				return "", fmt.Errorf("%q is not a valid glob: %s", s, Reason(err))
			}
			labels[i] = ascii
		}
		g = strings.Join(labels, ".")
	}
	for i := 0; i < len(g); i++ {
		c := g[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-_.:*?[]^!\\", c) >= 0) {
			return "", fmt.Errorf("%q: character %q is not allowed in a host glob", s, c)
		}
	}
	if rest, ok := strings.CutPrefix(g, "*."); ok && !strings.ContainsAny(rest, globMeta+"]") {
		return g, nil // the common case, valid by construction
	}
	if _, err := path.Match(g, ""); err != nil {
		return "", fmt.Errorf("%q is not a valid glob: %v", s, err)
	}
	return g, nil
}

// Reason is the cause at the end of an error of CanonicalHost or New
// ("invalid origin: host "x": cause"), for messages that name the input
// themselves.
func Reason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}
