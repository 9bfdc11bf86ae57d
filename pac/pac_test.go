package pac

import (
	"path"
	"regexp"
	"strings"
	"testing"
)

// The regular expression of a glob matches exactly the hosts path.Match
// matches (the proxy matches upstream.no_proxy with path.Match), checked
// with Go's regexp, whose syntax for these constructs is JavaScript's.
func TestGlobRegexpAgreesWithPathMatch(t *testing.T) {
	globs := []string{"*.corp.example", "intranet", "10.1.2.3", "host-?.lan", "[a-c]*.example", "[^a-c]*.example",
		"a\\*b", "*", "*.example.*", "x[.\\-]y", "w[\\]]z", "a.b"}
	hosts := []string{"corp.example", "a.corp.example", "a.b.corp.example", "intranet", "intranet.corp", "10.1.2.3",
		"10.1.2.33", "10x1x2x3", "host-1.lan", "host-12.lan", "b1.example", "d1.example", "a*b", "ab", "x.y", "x-y", "xzy",
		"w]z", "a.b", "axb", "www.example.org", ""}
	for _, g := range globs {
		re := regexp.MustCompile("^(?:" + globRegexp(g) + ")$")
		for _, h := range hosts {
			want, err := path.Match(g, h)
			if err != nil {
				t.Fatalf("%q: %v", g, err)
			}
			if got := re.MatchString(h); got != want {
				t.Errorf("glob %q (regexp %s) on %q: %v, path.Match says %v", g, re, h, got, want)
			}
		}
	}
}

// FuzzGlobRegexpAgreesWithPathMatch: for any valid glob and host, the
// regular expression and path.Match agree.
func FuzzGlobRegexpAgreesWithPathMatch(f *testing.F) {
	f.Add("*.corp.example", "a.corp.example")
	f.Add("[^a-c]?.x", "d1.x")
	f.Add("a\\*b", "a*b")
	f.Fuzz(func(t *testing.T, glob, host string) {
		if strings.Contains(host, "/") || !printableASCII(glob) || !printableASCII(host) {
			return // a host has no '/', and is ASCII (IDNA A-labels), as are the globs config keeps
		}
		want, err := path.Match(glob, host)
		if err != nil {
			return // config refuses invalid globs
		}
		re, err := regexp.Compile("^(?:" + globRegexp(glob) + ")$")
		if err != nil {
			t.Fatalf("glob %q: regexp %q: %v", glob, globRegexp(glob), err)
		}
		if got := re.MatchString(host); got != want {
			t.Fatalf("glob %q (regexp %s) on %q: %v, path.Match says %v", glob, re, host, got, want)
		}
	})
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
