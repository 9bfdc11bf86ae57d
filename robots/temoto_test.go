package robots

import (
	"testing"

	"github.com/temoto/robotstxt"
)

// TestWhereTemotoDiffers shows each category of disagreement between
// github.com/temoto/robotstxt (the most used Go parser) and Google's
// semantics found on the real-world corpus. In every case the package gives
// Google's answer (checked against the reference oracle) and temoto gives
// another one, which the test also asserts so that the category stays real.
func TestWhereTemotoDiffers(t *testing.T) {
	cases := []struct {
		category, body, agent, target string
		google                        bool // Google's verdict, ours
	}{
		{"rule without leading slash never matches", "User-agent: *\nDisallow: private\n", "bot", "/private", true},
		{"rule without leading slash: allow never matches", "User-agent: *\nDisallow: /\nAllow: public\n", "bot", "/public", false},
		{"crawl-delay between user-agent lines does not end the group", "User-agent: a\nCrawl-delay: 5\nUser-agent: b\nDisallow: /\n", "a", "/x", false},
		{"whitespace inside a value is part of the pattern", "User-agent: *\nDisallow: /a b\n", "bot", "/a", true},
		{"a rule before any user-agent does not reject the file", "Disallow: /x\nUser-agent: *\nDisallow: /\n", "bot", "/y", false},
		{"space before the colon", "User-agent: *\nDisallow : /x\n", "bot", "/x", false},
		{"wildcard patterns are anchored at the start of the path", "User-agent: *\nDisallow: /private*.html\n", "bot", "/public/private/x.html", true},
		{"tie between allow and disallow goes to allow", "User-agent: *\nDisallow: /page\nAllow: /page\n", "bot", "/page", true},
		{"agents are compared whole, not by prefix", "User-agent: *\nDisallow: /\nUser-agent: Google\nAllow: /\n", "Googlebot", "/x", false},
	}
	for _, c := range cases {
		t.Run(c.category, func(t *testing.T) {
			if got := Parse([]byte(c.body)).Allowed(c.agent, c.target); got != c.google {
				t.Errorf("ours = %v, want Google's %v", got, c.google)
			}
			if got, _ := refDecide(c.body, c.agent, c.target); got != c.google {
				t.Errorf("oracle = %v: the table is wrong", got)
			}
			data, err := robotstxt.FromString(c.body)
			if err != nil {
				t.Logf("temoto rejects the whole file: %v", err)
				return
			}
			if got := data.TestAgent(c.target, c.agent); got == c.google {
				t.Errorf("temoto agrees (%v): not a disagreement", got)
			} else {
				t.Logf("temoto says %v", got)
			}
		})
	}
}
