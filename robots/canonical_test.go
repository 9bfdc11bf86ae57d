package robots

import (
	"fmt"
	"strings"
	"testing"
)

func TestCanonicalTarget(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/", "/"},
		{"/a/b?x=%41", "/a/b?x=%41"},
		{"/%70rivate", "/private"},
		{"/%7Ejoe/x", "/~joe/x"},
		{"/%7ejoe/x", "/~joe/x"},
		{"/a%2fb", "/a%2Fb"},
		{"/a%2Fb", "/a%2Fb"},
		{"/%e4", "/%E4"},
		{"/ä", "/%C3%A4"},
		{"//private", "/private"},
		{"/a///b//", "/a/b/"},
		{"/public/../private", "/private"},
		{"/public/%2e%2e/private", "/private"},
		{"/a/./b/.", "/a/b/"},
		{"/a/b/..", "/a/"},
		{"/../../x", "/x"},
		{"/a/..b/.c/...", "/a/..b/.c/..."},
		{"/a/b/../c?q=/../#f", "/a/c?q=/../#f"},
		{"/%zz/%4", "/%25zz/%254"},
		{"/%0%61", "/%250a"},
	}
	for _, tt := range tests {
		if got := CanonicalTarget(tt.in); got != tt.want {
			t.Errorf("CanonicalTarget(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := CanonicalTarget(CanonicalTarget(tt.in)); got != tt.want {
			t.Errorf("CanonicalTarget is not idempotent on %q: %q", tt.in, got)
		}
	}
}

func TestDecideStrictStopsEvasions(t *testing.T) {
	tests := []struct {
		body, target string
		raw, strict  bool // Google's verdict, the guard's
		line         int  // of the strict decision's rule, 0 if none
	}{
		{"User-agent: *\nDisallow: /private", "/%70rivate", true, false, 2},
		{"User-agent: *\nDisallow: /private", "/public/../private", true, false, 2},
		{"User-agent: *\nDisallow: /private", "//private", true, false, 2},
		{"User-agent: *\nDisallow: /private", "/public/%2E%2E/private/x", true, false, 2},
		{"User-agent: *\nDisallow: /~joe/", "/%7Ejoe/x", true, false, 2},
		{"User-agent: *\nDisallow: /%7Ejoe/", "/~joe/x", true, false, 2},
		{"User-agent: *\nDisallow: /%7ejoe/", "/~joe/x", true, false, 2},
		{"User-agent: *\nDisallow: /ä", "/ä", true, false, 2},
		{"User-agent: *\nDisallow: /a%3C", "/a%3c", true, false, 2},
		{"User-agent: *\nDisallow: /private", "/private", false, false, 2},
		{"User-agent: *\nDisallow: /private", "/public/x", true, true, 0},
		{"User-agent: *\nDisallow: /*.pdf$", "/x/%2E%2E/y.pdf", false, false, 2},
		// A stricter canonical judgement never turns a disallow into an allow.
		{"User-agent: *\nDisallow: /a/../b\nAllow: /b", "/a/../b", false, false, 2},
		// Encoded slashes stay encoded: "/a%2Fb" is not "/a/b".
		{"User-agent: *\nDisallow: /a/b", "/a%2Fb", true, true, 0},
	}
	for _, tt := range tests {
		f := Parse([]byte(tt.body))
		g := f.Group("bot")
		if got := g.Decide(tt.target).Allowed; got != tt.raw {
			t.Errorf("%q on %q: Decide = %v, want Google's %v", tt.target, tt.body, got, tt.raw)
		}
		d := g.DecideStrict(tt.target)
		if d.Allowed != tt.strict || d.Rule.Line != tt.line {
			t.Errorf("%q on %q: DecideStrict = %v, want allowed %v line %d", tt.target, tt.body, d, tt.strict, tt.line)
		}
		if d.Allowed == tt.raw && d.Canonical != "" {
			t.Errorf("%q: Canonical %q set though the raw verdict stands", tt.target, d.Canonical)
		}
	}
}

func TestDecideStrictDoesNotAllocateOnCanonicalInput(t *testing.T) {
	f := Parse([]byte("User-agent: *\nDisallow: /private\nAllow: /p*ub$\n"))
	g := f.GroupForUserAgent("bot")
	if n := testing.AllocsPerRun(100, func() { g.DecideStrict("/public/page?q=1") }); n != 0 {
		t.Errorf("%v allocations", n)
	}
	if f.canonical() != nil {
		t.Error("canonical copy built although every pattern is canonical")
	}
}

// FuzzCanonicalTarget checks idempotence, that the query is untouched, and
// that the canonical path has no "//" and no dot segments; and, on a path
// derived from the input that is canonical by construction, that it is a
// fixed point and that a %-escape of one of its unreserved octets (lower or
// upper case hex) decodes back to it. Those two properties do not come from
// the code under test: a CanonicalTarget that returned "/" for every path,
// or decoded nothing, would satisfy the others.
func FuzzCanonicalTarget(f *testing.F) {
	for _, s := range []string{"/a/../b", "//x", "/%2e%2E/%7e", "/ä?q=/../", "/.", "/a/b/..", "/private/x", "/~joe/a-b_c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		c := CanonicalTarget(target)
		if CanonicalTarget(c) != c {
			t.Fatalf("not idempotent: %q -> %q -> %q", target, c, CanonicalTarget(c))
		}
		if i := strings.IndexAny(target, "?#"); i >= 0 && !strings.HasSuffix(c, target[i:]) {
			t.Fatalf("query changed: %q -> %q", target, c)
		}
		path := c
		if i := strings.IndexAny(c, "?#"); i >= 0 {
			path = c[:i]
		}
		if strings.Contains(path, "//") || strings.HasSuffix(path, "/..") || strings.Contains(path, "/../") || strings.Contains(path, "/./") {
			t.Fatalf("not canonical: %q -> %q", target, c)
		}

		p := canonicalByConstruction(target)
		if got := CanonicalTarget(p); got != p {
			t.Fatalf("canonical path %q is not a fixed point: got %q", p, got)
		}
		if got := CanonicalTarget(p + "?q=%41/../"); got != p+"?q=%41/../" {
			t.Fatalf("canonical path %q with a query is not a fixed point: got %q", p, got)
		}
		if i := strings.IndexFunc(p, func(r rune) bool { return r != '/' }); i >= 0 {
			hex := "%%%02X"
			if len(target)%2 == 1 {
				hex = "%%%02x"
			}
			escaped := p[:i] + fmt.Sprintf(hex, p[i]) + p[i+1:]
			if got := CanonicalTarget(escaped); got != p {
				t.Fatalf("the unreserved octet %q escaped in %q does not decode: got %q, want %q", p[i], escaped, got, p)
			}
		}
	})
}

// canonicalByConstruction maps s to a path that is canonical by RFC 3986's
// rules alone: it starts with "/", has only unreserved letters, digits, "-",
// "_", "~" and single slashes, so no escape, no non-ASCII octet, no "//" and
// no dot segment.
func canonicalByConstruction(s string) string {
	b := []byte{'/'}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '~':
			b = append(b, c)
		case c == '/' && b[len(b)-1] != '/':
			b = append(b, c)
		default:
			b = append(b, 'x')
		}
	}
	return string(b)
}

// The matching borrowed by tdmrep.json locations and RSL content urls:
// patterns and targets meet in one canonical form, a bare '$' or '*' in a
// target being the literal character a pattern writes %24 or %2A.
func TestCanonicalPatternAndMatchTarget(t *testing.T) {
	for _, tc := range []struct{ in, pattern, target string }{
		{"/a/b", "/a/b", "/a/b"},
		{"/price$", "/price$", "/price%24"},
		{"/a$b$", "/a%24b$", "/a%24b%24"},
		{"/%7euser/./x", "/~user/x", "/~user/x"},
		{"/a*b", "/a*b", "/a%2Ab"},
		{"page#frag", "page#frag", "/page"},
		{"", "", "/"},
	} {
		if got := CanonicalPattern(tc.in); got != tc.pattern {
			t.Errorf("CanonicalPattern(%q) = %q, want %q", tc.in, got, tc.pattern)
		}
		if got := MatchTarget(tc.in); got != tc.target {
			t.Errorf("MatchTarget(%q) = %q, want %q", tc.in, got, tc.target)
		}
	}
}
