package robots

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestGroupForUserAgentPicksMostSpecificToken(t *testing.T) {
	body := `User-agent: *
Disallow: /star
User-agent: Googlebot
Disallow: /google
User-agent: Googlebot-Image
Disallow: /image
User-agent: MJ12bot
Disallow: /mj
User-agent: bot
Disallow: /bot
`
	f := Parse([]byte(body))
	tests := []struct {
		header, group string
		line          int
	}{
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Googlebot", 3},
		{"Googlebot-Image/1.0", "Googlebot-Image", 5},
		{"googlebot", "Googlebot", 3},
		{"MJ12bot/1.4", "bot", 9}, // tokens "MJ" and "bot" both name groups: the longer wins
		{"MJ12/1.4", "MJ", 7},     // "User-agent: MJ12bot" is Google's "MJ"
		{"Mozilla/5.0 (compatible; bot)", "bot", 9},
		{"Mozilla/5.0 Googlebot bot", "Googlebot", 3}, // longest token wins
		{"curl/8.0", "*", 1},
		{"", "*", 1},
		{"Googlebotx/1.0", "*", 1}, // tokens are compared whole
	}
	for _, tt := range tests {
		g := f.GroupForUserAgent(tt.header)
		if g.Name() != tt.group || g.Lines()[0] != tt.line {
			t.Errorf("GroupForUserAgent(%q) = %q at %v, want %q at line %d", tt.header, g.Name(), g.Lines(), tt.group, tt.line)
		}
	}
}

func TestGroupWithoutStarFindsNothing(t *testing.T) {
	f := Parse([]byte("User-agent: a\nDisallow: /"))
	g := f.GroupForUserAgent("curl/8")
	if g.Found() || g.Name() != "" || !g.Decide("/x").Allowed {
		t.Errorf("no group should apply and allow: %+v", g.Decide("/x"))
	}
	var nilFile *File
	if !nilFile.Allowed("a", "/") || nilFile.GroupForUserAgent("a").Found() {
		t.Error("a nil *File should allow everything")
	}
}

func TestGroupReportsMergedLines(t *testing.T) {
	f := Parse([]byte("User-agent: a\nDisallow: /x\nUser-agent: b\nUser-agent: A\nDisallow: /y\n"))
	if got := f.Group("A").Lines(); !slices.Equal(got, []int{1, 4}) {
		t.Errorf("Lines = %v, want [1 4]", got)
	}
	if got := f.Agents(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Agents = %v", got)
	}
	if got := f.Group("a").Name(); got != "a" {
		t.Errorf("Name = %q, want the first spelling", got)
	}
}

func TestDecisionNamesRule(t *testing.T) {
	f := Parse([]byte("User-agent: *\nDisallow: /\nAllow: /d/index.html\n"))
	d := f.Group("x").Decide("/d/")
	want := Rule{Allow: true, Pattern: "/d/$", Line: 3, Implied: true}
	if !d.Matched || d.Rule != want {
		t.Errorf("Decide = %+v, want rule %+v", d, want)
	}
	d = f.Group("x").Decide("/e")
	if d.String() != `disallowed by "Disallow: /" (line 2, group "*")` {
		t.Errorf("String = %q", d.String())
	}
}

func TestIntervals(t *testing.T) {
	body := `User-agent: a
Crawl-delay: 2.5
User-agent: b
Disallow: /x
Request-rate: 1/10s

User-agent: c
Crawl-delay: 1
Request-rate: 30/1m
Disallow:

User-agent: d
Crawl-delay: nonsense
Request-rate: 0/1s
Disallow:

User-agent: e
Crawl-delay: 1e12
Request-rate: 1/2h 0800-1700
Disallow:

User-agent: A
Crawl-delay: 4
`
	f := Parse([]byte(body))
	tests := []struct {
		agent               string
		delay, rate, interv time.Duration
	}{
		{"a", 4 * time.Second, 10 * time.Second, 10 * time.Second}, // merged with the later "A" group: largest wins
		{"b", 2500 * time.Millisecond, 10 * time.Second, 10 * time.Second},
		{"c", time.Second, 2 * time.Second, 2 * time.Second},
		{"d", 0, 0, 0},
		{"e", MaxDelay, 2 * time.Hour, MaxDelay},
		{"z", 0, 0, 0},
	}
	for _, tt := range tests {
		g := f.Group(tt.agent)
		if g.CrawlDelay() != tt.delay || g.RequestInterval() != tt.rate || g.Interval() != tt.interv {
			t.Errorf("%s: delay %v rate %v interval %v, want %v %v %v", tt.agent,
				g.CrawlDelay(), g.RequestInterval(), g.Interval(), tt.delay, tt.rate, tt.interv)
		}
	}
}

func TestFileLevelLines(t *testing.T) {
	body := `Sitemap: https://example.com/a.xml
User-agent: *
Disallow: /x
Host: example.com
Host: other.example
Content-Signal: search=yes, AI-Train=No, junk
sitemap: https://example.com/b.xml
`
	f := Parse([]byte(body))
	if got := f.Sitemaps(); !slices.Equal(got, []string{"https://example.com/a.xml", "https://example.com/b.xml"}) {
		t.Errorf("Sitemaps = %v", got)
	}
	if f.Host() != "example.com" {
		t.Errorf("Host = %q, want the first", f.Host())
	}
	// Not a dictionary (an upper-case key, a bare "junk" is fine): read
	// leniently for its "no"s only.
	want := []Pref{{"ai-train", "no", 6}}
	if got := f.ContentSignals(); len(got) != 1 || got[0].Err == nil || !slices.Equal(got[0].Prefs, want) {
		t.Errorf("ContentSignals = %+v, want one unparsable statement with %v", got, want)
	}
}

func TestContentUsageLongestMatch(t *testing.T) {
	body := `User-agent: *
Content-Usage: train-ai=n
Content-Usage: /blog/ train-ai=y, search=y
Content-Usage: /blog/ train-ai=n
Disallow:
User-agent: Foo
Content-Usage: /x* search=n
Content-Usage: /p/ train-ai=n;note="why", train-ai=y, search=n;a, search=n
Content-Usage: /q/ Train-AI=n
`
	f := Parse([]byte(body))
	tests := []struct {
		agent, target string
		want          []Pref
	}{
		{"Bot", "/", []Pref{{"train-ai", "n", 2}}},
		{"Bot", "/blog/post", []Pref{{"train-ai", "y", 3}, {"search", "y", 3}, {"train-ai", "n", 4}}},
		{"Foo", "/xyz", []Pref{{"search", "n", 7}}},
		{"Foo", "/a", nil},
		{"Foo", "/p/1", []Pref{{"train-ai", "y", 8}, {"search", "n", 8}}}, // last value, parameters ignored
		{"Foo", "/q/1", nil}, // not a dictionary: no preference
	}
	for _, tt := range tests {
		var got []Pref
		for _, s := range f.Group(tt.agent).ContentUsage(tt.target) {
			got = append(got, s.Prefs...)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("ContentUsage(%q, %q) = %v, want %v", tt.agent, tt.target, got, tt.want)
		}
	}
}

func TestProductToken(t *testing.T) {
	for in, want := range map[string]string{
		"Googlebot/2.1": "Googlebot", "MJ12bot": "MJ", "*": "", "foo-bar_baz qux": "foo-bar_baz", "": "",
	} {
		if got := ProductToken(in); got != want {
			t.Errorf("ProductToken(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDecideDoesNotAllocate(t *testing.T) {
	f := Parse([]byte("User-agent: *\nDisallow: /a*b*c$\nAllow: /a\nUser-agent: FooBot\nDisallow: /x\n"))
	allocs := testing.AllocsPerRun(100, func() {
		g := f.GroupForUserAgent("Mozilla/5.0 (compatible; FooBot/1.0)")
		_ = g.Decide("/x/y?z=1")
		_ = f.Group("other").Decide("/a/b/c")
		_ = f.Allowed("FooBot", "/x")
	})
	if allocs != 0 {
		t.Errorf("allocations per decision = %v, want 0", allocs)
	}
}

func TestDisallowsAll(t *testing.T) {
	for body, want := range map[string]bool{
		"User-agent: *\nDisallow: /":                 true,
		"User-agent: *\nDisallow: /*":                true,
		"User-agent: *\nDisallow: *":                 true,
		"User-agent: *\nDisallow: /\nAllow: /public": false,
		"User-agent: *\nDisallow: /private":          false,
		"User-agent: other\nDisallow: /":             false,
		"":                                           false,
	} {
		if got := Parse([]byte(body)).GroupForUserAgent("bot").DisallowsAll(); got != want {
			t.Errorf("%q: DisallowsAll = %v, want %v", body, got, want)
		}
	}
}

// A host is refused only when the group refuses every path; the rule shown
// is the one that decides "/".
func TestDecideHostRefusesOnlyABlanketDisallow(t *testing.T) {
	for _, c := range []struct {
		body    string
		allowed bool
		rule    string
		line    int
	}{
		{"User-agent: *\nDisallow: /\n", false, "Disallow: /", 2},
		{"User-agent: *\nDisallow: /\nAllow: /public\n", true, "Disallow: /", 2}, // paths cannot be judged
		{"User-agent: *\nDisallow: /private\n", true, "", 0},
		{"User-agent: other\nDisallow: /\n", true, "", 0},
	} {
		d := Parse([]byte(c.body)).GroupForUserAgent("Bot").DecideHost()
		rule := ""
		if d.Matched {
			rule = d.Rule.String()
		}
		if d.Allowed != c.allowed || rule != c.rule || (d.Matched && d.Rule.Line != c.line) {
			t.Errorf("%q: allowed %v rule %q line %d; want %v %q %d", c.body, d.Allowed, rule, d.Rule.Line, c.allowed, c.rule, c.line)
		}
	}
}

// TestLicenseLines: License lines apply to the whole file whatever group
// they stand in, are kept in order as written, without empty ones, and
// at most MaxLicenses of them.
func TestLicenseLines(t *testing.T) {
	tests := []struct {
		name, body string
		want       []LicenseLine
	}{
		{"none", "User-agent: *\nDisallow: /x\n", nil},
		{"in and out of groups", "License: https://a.example/l.xml\nUser-agent: FooBot\nDisallow: /\nlicense:   /rel.xml  \nLICENSE:\n",
			[]LicenseLine{{"https://a.example/l.xml", 1}, {"/rel.xml", 4}}},
		{"bounded", strings.Repeat("License: https://a.example/l.xml\n", MaxLicenses+3), slices.Repeat([]LicenseLine{{"https://a.example/l.xml", 0}}, MaxLicenses)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Parse([]byte(tc.body)).Licenses()
			if tc.name == "bounded" {
				for i := range tc.want {
					tc.want[i].Line = i + 1
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Licenses = %v, want %v", got, tc.want)
			}
		})
	}
}
