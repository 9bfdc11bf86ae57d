package robots

import (
	"strings"
	"testing"
)

// conformanceCase is one query against one robots.txt. line is the line of
// the deciding rule, 0 when no rule decides.
type conformanceCase struct {
	name   string
	body   string
	agent  string
	target string
	allow  bool
	line   int
}

// The table follows the semantics of docs/library.md bullet by bullet, with cases taken from RFC 9309
// (§2.1–2.2.3 and its §5 example) and Google's robots.txt documentation.
var conformance = []conformanceCase{
	// Lines end in LF, CR LF or CR.
	{"LF line ends", "User-agent: *\nDisallow: /a\n", "Bot", "/a", false, 2},
	{"CRLF line ends", "User-agent: *\r\nDisallow: /a\r\n", "Bot", "/a", false, 2},
	{"CR line ends", "User-agent: *\rDisallow: /a\r", "Bot", "/a", false, 2},
	{"mixed line ends count lines like Google", "User-agent: *\r\n\rDisallow: /a\n", "Bot", "/a", false, 3},
	{"CR CR is an empty line", "User-agent: *\r\r\nDisallow: /a", "Bot", "/a", false, 3},
	{"last line without line end", "User-agent: *\nDisallow: /a", "Bot", "/a", false, 2},
	// A UTF-8 BOM at the start is skipped.
	{"BOM skipped", "\xEF\xBB\xBFUser-agent: *\nDisallow: /a", "Bot", "/a", false, 2},
	{"partial BOM skipped", "\xEF\xBBUser-agent: *\nDisallow: /a", "Bot", "/a", false, 2},
	{"BOM only at start", "User-agent: *\n\xEF\xBB\xBFDisallow: /a", "Bot", "/a", true, 0},
	// '#' starts a comment anywhere.
	{"comment line", "# Disallow: /a\nUser-agent: *\nDisallow: /b", "Bot", "/a", true, 0},
	{"comment after value", "User-agent: * # all\nDisallow: /a # secret", "Bot", "/a", false, 2},
	{"comment cuts value", "User-agent: *\nDisallow: /a#b", "Bot", "/a", false, 2},
	{"comment cuts value to empty", "User-agent: *\nDisallow: #/a", "Bot", "/a", true, 0},
	// Whitespace around keys and values is ignored.
	{"whitespace around key and value", "  User-agent  :  *  \n\t Disallow \t: \t/a \t", "Bot", "/a", false, 2},
	{"whitespace inside value kept", "User-agent: *\nDisallow: /a b", "Bot", "/a", true, 0},
	{"whitespace inside value matches literally", "User-agent: *\nDisallow: /a b", "Bot", "/a b", false, 2},
	// The colon may be missing between two words.
	{"missing colon", "User-agent *\nDisallow /a", "Bot", "/a", false, 2},
	{"missing colon with three words is ignored", "User-agent: *\nDisallow /a /b", "Bot", "/a", true, 0},
	{"colon wins over whitespace", "User-agent: *\nDisallow : /a", "Bot", "/a", false, 2},
	{"key without value", "User-agent: *\nDisallow", "Bot", "/a", true, 0},
	{"empty key", "User-agent: *\n: /a\nDisallow: /b", "Bot", "/a", true, 0},
	// Keys are case-insensitive and common typos are accepted.
	{"key case", "USER-AGENT: *\nDISALLOW: /a", "Bot", "/a", false, 2},
	{"typo useragent", "useragent: *\nDisallow: /a", "Bot", "/a", false, 2},
	{"typo user agent", "user agent: *\nDisallow: /a", "Bot", "/a", false, 2},
	{"typo dissallow", "User-agent: *\nDissallow: /a", "Bot", "/a", false, 2},
	{"typo dissalow", "User-agent: *\ndissalow: /a", "Bot", "/a", false, 2},
	{"typo disalow", "User-agent: *\ndisalow: /a", "Bot", "/a", false, 2},
	{"typo diasllow", "User-agent: *\ndiasllow: /a", "Bot", "/a", false, 2},
	{"typo disallaw", "User-agent: *\ndisallaw: /a", "Bot", "/a", false, 2},
	{"keys match by prefix", "User-agent: *\nDisallowed: /a", "Bot", "/a", false, 2},
	{"no typo for allow", "User-agent: *\nDisallow: /\nAlow: /a", "Bot", "/a", false, 2},
	{"unknown key ignored", "User-agent: *\nNoindex: /a", "Bot", "/a", true, 0},
	// Groups.
	{"consecutive user-agents share rules", "User-agent: a\nUser-agent: b\nDisallow: /x", "b", "/x", false, 3},
	{"user-agent after a rule starts a group", "User-agent: a\nDisallow: /x\nUser-agent: b\nDisallow: /y", "b", "/x", true, 0},
	{"sitemap does not end user-agent run", "User-agent: a\nSitemap: http://x/s.xml\nUser-agent: b\nDisallow: /x", "a", "/x", false, 4},
	{"crawl-delay does not end user-agent run", "User-agent: a\nCrawl-delay: 5\nUser-agent: b\nDisallow: /x", "a", "/x", false, 4},
	{"unknown line does not end user-agent run", "User-agent: a\nFoo: bar\nUser-agent: b\nDisallow: /x", "a", "/x", false, 4},
	{"blank line does not end user-agent run", "User-agent: a\n\nUser-agent: b\n\nDisallow: /x", "a", "/x", false, 5},
	{"empty disallow ends user-agent run", "User-agent: a\nDisallow:\nUser-agent: b\nDisallow: /x", "a", "/x", true, 0},
	{"rules before any user-agent ignored", "Disallow: /x\nUser-agent: *\nDisallow: /y", "Bot", "/x", true, 0},
	{"group continues after blank lines", "User-agent: *\n\n\nDisallow: /x", "Bot", "/x", false, 4},
	// Agent matching.
	{"agent case-insensitive", "User-agent: FooBot\nDisallow: /x", "foobot", "/x", false, 2},
	{"agent line cut to product token", "User-agent: FooBot/1.2 (+http://x)\nDisallow: /x", "FooBot", "/x", false, 2},
	{"agent line cut at digit", "User-agent: MJ12bot\nDisallow: /x", "MJ", "/x", false, 2},
	{"agent line cut at digit, full name no match", "User-agent: MJ12bot\nDisallow: /x", "MJ12bot", "/x", true, 0},
	{"agent token with - and _", "User-agent: Foo-Bot_x\nDisallow: /x", "foo-bot_X", "/x", false, 2},
	{"agent compared whole, not prefix", "User-agent: Foo\nDisallow: /x", "FooBot", "/x", true, 0},
	{"agent compared whole, not prefix (2)", "User-agent: FooBot\nDisallow: /x", "Foo", "/x", true, 0},
	{"groups of same agent merged", "User-agent: a\nDisallow: /x\nUser-agent: b\nDisallow: /y\nUser-agent: A\nDisallow: /z", "a", "/z", false, 6},
	{"groups of same agent merged (first)", "User-agent: a\nDisallow: /x\nUser-agent: b\nDisallow: /y\nUser-agent: A\nDisallow: /z", "a", "/x", false, 2},
	{"star when no group names agent", "User-agent: a\nDisallow: /x\nUser-agent: *\nDisallow: /y", "b", "/y", false, 4},
	{"star groups merged", "User-agent: *\nDisallow: /x\nUser-agent: a\nDisallow: /\nUser-agent: *\nDisallow: /y", "b", "/y", false, 6},
	{"specific and star never combined", "User-agent: *\nDisallow: /x\nUser-agent: a\nDisallow: /y", "a", "/x", true, 0},
	{"specific group without rules allows all", "User-agent: *\nDisallow: /\nUser-agent: a\n", "a", "/x", true, 0},
	{"specific group with empty disallow allows all", "User-agent: *\nDisallow: /\nUser-agent: a\nDisallow:", "a", "/x", true, 0},
	{"star and agent in one run: rules go to agent", "User-agent: *\nUser-agent: a\nDisallow: /x", "a", "/x", false, 3},
	{"star and agent in one run: rules go to star too", "User-agent: *\nUser-agent: a\nDisallow: /x", "b", "/x", false, 3},
	{"star followed by text is global", "User-agent: * everyone\nDisallow: /x", "Bot", "/x", false, 2},
	{"star glued to text is not global", "User-agent: *bot\nDisallow: /x", "Bot", "/x", true, 0},
	{"no groups at all", "Disallow: /x", "Bot", "/x", true, 0},
	{"empty file", "", "Bot", "/x", true, 0},
	{"agent with space never matches", "User-agent: Foo\nDisallow: /x", "Foo Bot", "/x", true, 0},
	// Rules, '*' and '$', path + query.
	{"disallow prefix", "User-agent: *\nDisallow: /fish", "Bot", "/fishheads/x", false, 2},
	{"disallow is case-sensitive", "User-agent: *\nDisallow: /fish", "Bot", "/Fish.asp", true, 0},
	{"empty disallow ignored", "User-agent: *\nDisallow:", "Bot", "/x", true, 0},
	{"empty allow ignored", "User-agent: *\nDisallow: /\nAllow:", "Bot", "/x", false, 2},
	{"disallow all", "User-agent: *\nDisallow: /", "Bot", "/", false, 2},
	{"star matches all", "User-agent: *\nDisallow: /*", "Bot", "/anything", false, 2},
	{"star in middle", "User-agent: *\nDisallow: /fish*.php", "Bot", "/fish/salmon.php", false, 2},
	{"star in middle no match", "User-agent: *\nDisallow: /fish*.php", "Bot", "/fish/salmon.html", true, 0},
	{"dollar anchors", "User-agent: *\nDisallow: /*.php$", "Bot", "/folder/filename.php", false, 2},
	{"dollar anchors: query", "User-agent: *\nDisallow: /*.php$", "Bot", "/filename.php?parameters", true, 0},
	{"dollar anchors: trailing slash", "User-agent: *\nDisallow: /*.php$", "Bot", "/filename.php/", true, 0},
	{"dollar anchors: longer", "User-agent: *\nDisallow: /*.php$", "Bot", "/filename.php5", true, 0},
	{"dollar anchors: case", "User-agent: *\nDisallow: /*.php$", "Bot", "/windows.PHP", true, 0},
	{"dollar in middle is literal", "User-agent: *\nDisallow: /a$b", "Bot", "/a$bc", false, 2},
	{"only final dollar anchors", "User-agent: *\nDisallow: /a$$", "Bot", "/a$", false, 2},
	{"lone dollar matches nothing", "User-agent: *\nDisallow: $", "Bot", "/", true, 0},
	{"star dollar", "User-agent: *\nDisallow: /*$", "Bot", "/x", false, 2},
	{"gif rule from RFC example", "User-Agent: *\nDisallow: *.gif$", "Bot", "/x/y.gif", false, 2},
	{"query matched", "User-agent: *\nDisallow: /*?sort=", "Bot", "/list?sort=asc", false, 2},
	{"query matched literally", "User-agent: *\nDisallow: /p?id=1", "Bot", "/p?id=1&x", false, 2},
	{"params matched", "User-agent: *\nDisallow: /p;jsessionid", "Bot", "/p;jsessionid=1", false, 2},
	{"fragment ignored", "User-agent: *\nDisallow: /a$", "Bot", "/a#frag", false, 2},
	{"fragment not matched", "User-agent: *\nDisallow: /a#b", "Bot", "/a#c", false, 2},
	{"empty target is slash", "User-agent: *\nDisallow: /$", "Bot", "", false, 2},
	{"query-only target gets slash", "User-agent: *\nDisallow: /?x", "Bot", "?x=1", false, 2},
	{"pattern without leading slash never matches", "User-agent: *\nDisallow: private", "Bot", "/private", true, 0},
	{"robots.txt not special in matcher", "User-agent: *\nDisallow: /", "Bot", "/robots.txt", false, 2},
	// Precedence.
	{"longest match wins: allow", "User-agent: *\nDisallow: /a\nAllow: /a/b", "Bot", "/a/b/c", true, 3},
	{"longest match wins: disallow", "User-agent: *\nAllow: /a\nDisallow: /a/b", "Bot", "/a/b/c", false, 3},
	{"tie goes to allow", "User-agent: *\nDisallow: /a\nAllow: /a", "Bot", "/a", true, 3},
	{"tie goes to allow (wildcards)", "User-agent: *\nDisallow: /*.x\nAllow: /a*x", "Bot", "/a.x", true, 3},
	{"length counts wildcards", "User-agent: *\nAllow: /page\nDisallow: /*.htm", "Bot", "/page.htm", false, 3},
	{"length in octets after escaping", "User-agent: *\nAllow: /ä\nDisallow: /%C3%A", "Bot", "/%C3%A4", true, 2},
	{"earliest line among equals", "User-agent: *\nDisallow: /a\nDisallow: /b\nDisallow: /a", "Bot", "/a", false, 2},
	{"longest across merged groups", "User-agent: a\nDisallow: /x\nUser-agent: b\nDisallow: /\nUser-agent: a\nAllow: /x/y", "a", "/x/y", true, 6},
	{"google doc example: /p allow vs / disallow", "User-agent: *\nAllow: /p\nDisallow: /", "Bot", "/page", true, 2},
	{"google doc example: /folder", "User-agent: *\nAllow: /folder\nDisallow: /folder", "Bot", "/folder/page", true, 2},
	{"google doc example: /page vs /*.htm", "User-agent: *\nAllow: /page\nDisallow: /*.htm", "Bot", "/page.htm", false, 3},
	{"google doc example: /$ vs /", "User-agent: *\nAllow: /$\nDisallow: /", "Bot", "/", true, 2},
	{"google doc example: /$ vs / on page", "User-agent: *\nAllow: /$\nDisallow: /", "Bot", "/page.htm", false, 3},
	// index.htm(l) normalisation of allow rules.
	{"allow index.html allows dir", "User-agent: *\nDisallow: /\nAllow: /d/index.html", "Bot", "/d/", true, 3},
	{"allow index.htm allows dir", "User-agent: *\nDisallow: /\nAllow: /d/index.htm", "Bot", "/d/", true, 3},
	{"allow index.html not dir contents", "User-agent: *\nDisallow: /\nAllow: /d/index.html", "Bot", "/d/x", false, 2},
	// Percent-encoding.
	{"non-ASCII pattern is escaped", "User-agent: *\nDisallow: /foo/bar/ツ", "Bot", "/foo/bar/%E3%83%84", false, 2},
	{"escaped pattern matches itself", "User-agent: *\nDisallow: /foo/bar/%E3%83%84", "Bot", "/foo/bar/%E3%83%84", false, 2},
	{"pattern escapes upper-cased", "User-agent: *\nDisallow: /a%3c", "Bot", "/a%3C", false, 2},
	{"path escapes not normalised (Google)", "User-agent: *\nDisallow: /a%3C", "Bot", "/a%3c", true, 0},
	{"escapes not decoded (RFC 2.2.2 table)", "User-agent: *\nDisallow: /foo/bar/%62%61%7A", "Bot", "/foo/bar/baz", true, 0},
	{"broken escape kept", "User-agent: *\nDisallow: /a%zz", "Bot", "/a%zz", false, 2},
	{"raw non-ASCII path not matched (Google)", "User-agent: *\nDisallow: /ä", "Bot", "/ä", true, 0},
	// Line limits.
	{"NUL ends the line", "User-agent: *\nDisallow: /a\x00b", "Bot", "/ax", false, 2},
	{"long line truncated", "User-agent: *\nDisallow: /" + strings.Repeat("a", maxLineLen) + "b", "Bot", "/" + strings.Repeat("a", maxLineLen-11), false, 2},
}

func TestConformance(t *testing.T) {
	for _, c := range conformance {
		t.Run(c.name, func(t *testing.T) {
			f := Parse([]byte(c.body))
			d := f.Group(c.agent).Decide(c.target)
			if d.Allowed != c.allow || d.Rule.Line != c.line {
				t.Errorf("Decide(%q, %q) = allowed %v line %d (%v), want allowed %v line %d",
					c.agent, c.target, d.Allowed, d.Rule.Line, d, c.allow, c.line)
			}
			if got := f.Allowed(c.agent, c.target); got != d.Allowed {
				t.Errorf("Allowed = %v, Decide = %v", got, d.Allowed)
			}
			if ok, line := refDecide(c.body, c.agent, c.target); ok != c.allow || line != c.line {
				t.Errorf("reference matcher says allowed %v line %d: the table or the reference is wrong", ok, line)
			}
		})
	}
}

func TestRFC9309Example(t *testing.T) {
	// RFC 9309 §5.1.
	body := `User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF`
	f := Parse([]byte(body))
	tests := []struct {
		agent, target string
		allow         bool
	}{
		{"otherbot", "/example/page.html", false},
		{"otherbot", "/publications/x.gif", true}, // longer allow wins
		{"otherbot", "/images/x.gif", false},
		{"otherbot", "/publications/x.html", true},
		{"foobot", "/example/page.html", true},
		{"foobot", "/example/allowed.gif", true},
		{"foobot", "/other", false},
		{"barbot", "/example/page.html", false},
		{"bazbot", "/example/page.html", false},
		{"bazbot", "/example/x.gif", true},
		{"quxbot", "/example/page.html", true},
	}
	for _, tt := range tests {
		if got := f.Allowed(tt.agent, tt.target); got != tt.allow {
			t.Errorf("Allowed(%q, %q) = %v, want %v", tt.agent, tt.target, got, tt.allow)
		}
	}
}

func TestMaxFileSizeIgnoresTheRest(t *testing.T) {
	var b strings.Builder
	b.WriteString("User-agent: *\nDisallow: /a\n")
	for b.Len() < MaxFileSize {
		b.WriteString("# padding padding padding padding\n")
	}
	b.WriteString("Disallow: /b\n")
	f := Parse([]byte(b.String()))
	if !f.Truncated {
		t.Error("Truncated = false for a body over MaxFileSize")
	}
	if f.Allowed("Bot", "/a") {
		t.Error("rule before the limit not applied")
	}
	if !f.Allowed("Bot", "/b") {
		t.Error("rule past the limit applied")
	}
	if Parse([]byte("User-agent: *\nDisallow: /a\n")).Truncated {
		t.Error("Truncated = true for a small body")
	}
}

func TestIsRobotsTxt(t *testing.T) {
	for target, want := range map[string]bool{
		"/robots.txt": true, "/robots.txt?x=1": true, "/robots.txt#f": true,
		"/robots.txt/": false, "/a/robots.txt": false, "/ROBOTS.TXT": false, "/": false,
	} {
		if got := IsRobotsTxt(target); got != want {
			t.Errorf("IsRobotsTxt(%q) = %v, want %v", target, got, want)
		}
	}
}
