package robots

import (
	"strings"
	"testing"
)

// Origins decode reserved characters too: under the evasion guard a
// percent-encoded reserved character does not get past a rule that names
// it plainly, nor the reverse; an encoded '/' (or '%', '?', '#') is never
// decoded, since it changes the path's structure.
func TestDecideStrictDecodesReservedCharacters(t *testing.T) {
	const robots = "User-agent: *\nDisallow: /@admin\nDisallow: /a+b\nDisallow: /c:d\nDisallow: /e!f\nDisallow: /%24money\nDisallow: /x/y\nDisallow: /p%25q\n"
	g := Parse([]byte(robots)).GroupForUserAgent("Bot")
	tests := []struct {
		target  string
		allowed bool
		judged  string // the decoded target that refused, "" when allowed or refused raw
		rule    string
	}{
		{"/@admin", false, "", "Disallow: /@admin"},
		{"/%40admin", false, "/@admin", "Disallow: /@admin"},
		{"/%40ADMIN", true, "", ""},
		{"/a%2Bb", false, "/a+b", "Disallow: /a+b"},
		{"/a%2bb?x", false, "/a+b?x", "Disallow: /a+b"},
		{"/c%3Ad", false, "/c:d", "Disallow: /c:d"},
		{"/e%21f", false, "/e!f", "Disallow: /e!f"},
		{"/$money", false, "/$money", "Disallow: /$money"}, // the pattern's %24 decoded
		{"/x%2Fy", true, "", ""},                           // an encoded slash is another path
		{"/p%q", false, "", "Disallow: /p%25q"},            // a lone '%' is the literal %25, for Google's matcher too
		{"/p%25q", false, "", "Disallow: /p%25q"},
		{"/%2540admin", true, "", ""}, // "%40" after one decoding: an origin decodes once
		{"/public/..%2F@admin", true, "", ""},
		{"/public/../%40admin", false, "/@admin", "Disallow: /@admin"},
	}
	for _, tt := range tests {
		d := g.DecideStrict(tt.target)
		judged := ""
		if d.Decoded {
			judged = d.Canonical
		}
		rule := ""
		if d.Matched && !d.Allowed {
			rule = d.Rule.String()
		}
		if d.Allowed != tt.allowed || judged != tt.judged || rule != tt.rule {
			t.Errorf("%s: allowed %v, decoded %q, rule %q; want %v %q %q", tt.target, d.Allowed, judged, rule, tt.allowed, tt.judged, tt.rule)
		}
	}
}

// Decoding twice changes nothing: the decoded form is a fixed point, so
// a target decoded by an intermediary and then by the origin is judged
// alike.
func FuzzDecodedTarget(f *testing.F) {
	for _, s := range []string{"/%40admin", "/a%2Fb/%2e%2E/c", "/%2540", "/%", "/%zz%41", "//x/./y/../%7e?%40"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		d := DecodedTarget(target)
		if DecodedTarget(d) != d {
			t.Errorf("DecodedTarget(%q) = %q, which decodes again to %q", target, d, DecodedTarget(d))
		}
		path := d[:strings.IndexAny(d+"?", "?#")] // the query and fragment are kept as they are
		for i := 0; i+2 < len(path); i++ {
			if path[i] == '%' && isHex(path[i+1]) && isHex(path[i+2]) {
				if v := unhex(path[i+1])<<4 | unhex(path[i+2]); decodable(v) {
					t.Errorf("DecodedTarget(%q) = %q keeps the escape of %q", target, d, v)
				}
			}
		}
	})
}
