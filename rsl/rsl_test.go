package rsl

import (
	"errors"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/origin"
)

const sample = `<?xml version="1.0" encoding="UTF-8"?>
<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/*">
    <license>
      <permits type="usage">search, ai-input</permits>
      <permits type="user">commercial non-commercial</permits>
    </license>
  </content>
  <content url="https://example.com/premium/*" server="https://licenses.example.net/api">
    <license>
      <prohibits type="usage">ai-train</prohibits>
    </license>
  </content>
  <content url="/nolicence/">
  </content>
  <content url="/open/">
    <license><prohibits type="geo">us</prohibits></license>
  </content>
  <content url="/alternatives/">
    <license><prohibits type="usage">ai-all</prohibits></license>
    <license><permits type="usage">ai-index</permits><payment type="subscription"/></license>
  </content>
  <content url="/everything$">
    <license><prohibits>all</prohibits></license>
  </content>
</rsl>`

// TestJudgeReadsPermitsAndProhibits: the content element with the longest
// matching pattern applies, a prohibition of any licence refuses what it
// lists (all and ai-all included), a licence with usage permits grants
// what it lists and no more, one with only usage prohibitions what they do
// not list, one that states no usage nothing; a server attribute is
// reported for what is granted. (The conformance table, with the sections
// each case follows, is policy's TestConformanceRSL.)
func TestJudgeReadsPermitsAndProhibits(t *testing.T) {
	doc, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	user := Client{User: "commercial", Country: "FR"}
	tests := []struct {
		name, scheme, host, target, usage string
		content                           int // -1: none
		refused, notPermitted             bool
		by, server                        string
	}{
		{"permitted usage passes", "https", "example.com", "/a", "search", 0, false, false, "", ""},
		{"a usage permits does not list is refused", "https", "example.com", "/a", "ai-train", 0, true, true, `<permits type="usage">search, ai-input</permits>`, ""},
		{"an unknown purpose is not permitted either", "https", "example.com", "/a", "archive", 0, true, true, `<permits type="usage">search, ai-input</permits>`, ""},
		{"the longer full-URL pattern applies and prohibits", "https", "example.com", "/premium/x", "ai-train", 1, true, false, `<prohibits type="usage">ai-train</prohibits>`, ""},
		{"a usage not prohibited needs the licence server", "https", "example.com", "/premium/x", "search", 1, false, false, "", "https://licenses.example.net/api"},
		{"the default port is the URL's", "https", "EXAMPLE.com:443", "/premium/x", "ai-train", 1, true, false, `<prohibits type="usage">ai-train</prohibits>`, ""},
		{"a full URL of another host does not match", "https", "other.example", "/premium/x", "ai-train", 0, true, true, `<permits type="usage">search, ai-input</permits>`, ""},
		{"a full URL of another scheme does not match", "http", "example.com", "/premium/x", "search", 0, false, false, "", ""},
		{"content without licence grants nothing", "https", "example.com", "/nolicence/x", "ai-train", 2, true, true, "", ""},
		{"a geo prohibition of the client's country refuses", "https", "example.com", "/open/x", "ai-train", 3, true, false, `<prohibits type="geo">us</prohibits>`, ""},
		{"ai-all prohibits ai-input", "https", "example.com", "/alternatives/x", "ai-input", 4, true, false, `<prohibits type="usage">ai-all</prohibits>`, ""},
		{"a prohibition in one licence wins over another's permission", "https", "example.com", "/alternatives/x", "ai-index", 4, true, false, `<prohibits type="usage">ai-all</prohibits>`, ""},
		{"ai-all does not cover search: the first licence grants it", "https", "example.com", "/alternatives/x", "search", 4, false, false, "", ""},
		{"all and no type prohibit anything", "https", "example.com", "/everything", "search", 5, true, false, `<prohibits type="usage">all</prohibits>`, ""},
		{"$ anchors the end", "https", "example.com", "/everything/more", "search", 0, false, false, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := origin.New(tc.scheme, tc.host)
			if err != nil {
				t.Fatal(err)
			}
			m := doc.Match(o, tc.target, false)
			if m.TooCostly {
				t.Fatal("too costly")
			}
			if m.Content == nil || m.Content.Index != tc.content {
				t.Fatalf("matched %v, want content %d", m.Content, tc.content)
			}
			c := user
			if tc.content == 3 {
				c.Country = "US" // the list says us: codes compare ignoring case
			}
			v := m.Content.Judge(tc.usage, c, Options{})
			by := ""
			if v.By != nil {
				by = v.By.String()
			}
			if v.Refused != tc.refused || v.NotPermitted != tc.notPermitted || by != tc.by || v.Server != tc.server {
				t.Fatalf("got refused=%v notPermitted=%v by=%q server=%q, want %v %v %q %q", v.Refused, v.NotPermitted, by, v.Server,
					tc.refused, tc.notPermitted, tc.by, tc.server)
			}
		})
	}
}

// TestMatchNone: a target no pattern matches has no content element; a
// target is matched in canonical form (%7E is ~).
func TestMatchNone(t *testing.T) {
	doc, err := Parse([]byte(`<rsl xmlns="https://rslstandard.org/rsl"><content url="/a/~x$"/></rsl>`))
	if err != nil {
		t.Fatal(err)
	}
	o := origin.Origin{Scheme: "https", Host: "example.com", Port: 443}
	if m := doc.Match(o, "/b", false); m.Content != nil || m.TooCostly {
		t.Fatalf("got %+v", m)
	}
	if m := doc.Match(o, "/a/%7Ex", false); m.Content == nil {
		t.Fatal("a canonical target does not match")
	}
}

// TestMatchCanonicalHosts: a full url names its site in any spelling the
// origin package reads as the same (IDNA, trailing dot, case, default or
// zero-padded port, IPv4 shorthands), and no other site.
func TestMatchCanonicalHosts(t *testing.T) {
	for _, tc := range []struct {
		url, site string
		match     bool
	}{
		{"https://bücher.example/", "https://xn--bcher-kva.example", true},
		{"https://xn--bcher-kva.example/", "https://bücher.example", true},
		{"http://localhost.:8080/", "http://localhost:8080", true},
		{"https://example.com:0443/", "https://example.com", true},
		{"https://EXAMPLE.com/", "https://example.com:443", true},
		{"http://127.1:8080/", "http://127.0.0.1:8080", true},
		{"https://example.com/", "http://example.com", false},
		{"https://example.com:8443/", "https://example.com", false},
		{"https://other.example/", "https://example.com", false},
	} {
		doc, err := Parse([]byte(`<rsl xmlns="https://rslstandard.org/rsl"><content url="` + tc.url + `"/></rsl>`))
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		o, err := origin.Parse(tc.site)
		if err != nil {
			t.Fatal(err)
		}
		if m := doc.Match(o, "/x", false); (m.Content != nil) != tc.match {
			t.Errorf("<content url=%q> for %s: matched %v, want %v", tc.url, tc.site, m.Content != nil, tc.match)
		}
	}
}

// TestEmptyURLIsTheLinkingPage: <content url=""> matches the resource that
// linked the document, before any pattern, and nothing for robots.txt.
func TestEmptyURLIsTheLinkingPage(t *testing.T) {
	doc, err := Parse([]byte(`<rsl xmlns="https://rslstandard.org/rsl"><content url="/*"/><content url=""/></rsl>`))
	if err != nil {
		t.Fatal(err)
	}
	o := origin.Origin{Scheme: "https", Host: "example.com", Port: 443}
	if m := doc.Match(o, "/page", true); m.Content == nil || m.Content.Index != 1 {
		t.Errorf("linked: matched %v, want the empty url", m.Content)
	}
	if m := doc.Match(o, "/page", false); m.Content == nil || m.Content.Index != 0 {
		t.Errorf("from robots.txt: matched %v, want the pattern", m.Content)
	}
	if doc.HasEmptyURL() != &doc.Contents[1] {
		t.Error("HasEmptyURL does not name it")
	}
}

// TestParseRefusesWhatCannotBeJudged: every document that cannot be
// judged as written is an error, never an empty licence.
func TestParseRefusesWhatCannotBeJudged(t *testing.T) {
	deep := `<rsl xmlns="https://rslstandard.org/rsl"><content url="/">` + strings.Repeat("<x>", MaxDepth) + strings.Repeat("</x>", MaxDepth) + `</content></rsl>`
	many := `<rsl xmlns="https://rslstandard.org/rsl"><content url="/">` + strings.Repeat("<x/>", MaxElements) + `</content></rsl>`
	tests := []struct{ name, doc, want string }{
		{"not XML", "License: none", "text before the root"},
		{"HTML", "<html><body>hi</body></html>", "not <rsl>"},
		{"no namespace", `<rsl><content url="/"/></rsl>`, "not <rsl>"},
		{"another namespace", `<rsl xmlns="https://example.org/rsl"><content url="/"/></rsl>`, "not <rsl>"},
		{"no content", `<rsl xmlns="https://rslstandard.org/rsl"></rsl>`, "no <content>"},
		{"content without url", `<rsl xmlns="https://rslstandard.org/rsl"><content/></rsl>`, "without a url"},
		{"content url with no usable host", `<rsl xmlns="https://rslstandard.org/rsl"><content url="https://a..b/"/></rsl>`, "no usable host"},
		{"content url neither URL nor path", `<rsl xmlns="https://rslstandard.org/rsl"><content url="premium"/></rsl>`, "not an http(s) URL or a path"},
		{"content url of another scheme", `<rsl xmlns="https://rslstandard.org/rsl"><content url="ftp://x/"/></rsl>`, "not an http(s) URL"},
		{"DOCTYPE with entities", `<!DOCTYPE rsl [<!ENTITY a "aaaa">]><rsl xmlns="https://rslstandard.org/rsl"><content url="/">&a;</content></rsl>`, "DOCTYPE"},
		{"undeclared entity", `<rsl xmlns="https://rslstandard.org/rsl"><content url="/"><license><prohibits>&nbsp;</prohibits></license></content></rsl>`, "entity"},
		{"unclosed", `<rsl xmlns="https://rslstandard.org/rsl"><content url="/">`, "EOF"},
		{"mismatched", `<rsl xmlns="https://rslstandard.org/rsl"><content url="/"></license></rsl>`, "syntax error"},
		{"element inside a list", `<rsl xmlns="https://rslstandard.org/rsl"><content url="/"><license><prohibits>a<b/></prohibits></license></content></rsl>`, "inside"},
		{"too deep", deep, "nested deeper than 32"},
		{"too many elements", many, "more than 20000 elements"},
		{"second root", `<rsl xmlns="https://rslstandard.org/rsl"><content url="/"/></rsl><rsl/>`, "second root"},
		{"other encoding", `<?xml version="1.0" encoding="ISO-8859-1"?><rsl xmlns="https://rslstandard.org/rsl"><content url="/"/></rsl>`, "CharsetReader"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := Parse([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, %v; want an error containing %q", doc, err, tc.want)
			}
		})
	}
	big := make([]byte, MaxDocumentSize+1)
	if _, err := Parse(big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a document of %d bytes: %v", len(big), err)
	}
}

// TestPrefixedElements: the RSL elements may carry a prefix bound to the
// namespace.
func TestPrefixedElements(t *testing.T) {
	doc, err := Parse([]byte(`<r:rsl xmlns:r="https://rslstandard.org/rsl"><r:content url="/"><r:license><r:prohibits type="usage">search</r:prohibits></r:license></r:content></r:rsl>`))
	if err != nil {
		t.Fatal(err)
	}
	if v := doc.Match(origin.Origin{Scheme: "https", Host: "a.example", Port: 443}, "/x", false).Content.Judge("search", Client{}, Options{}); !v.Refused {
		t.Fatalf("got %+v", v)
	}
}

// TestSummaryIsBounded: the terms an audit record lists are bounded, in
// licences (4, then a count) and in bytes per licence.
func TestSummaryIsBounded(t *testing.T) {
	doc, err := Parse([]byte(`<rsl xmlns="https://rslstandard.org/rsl"><content url="/">` +
		strings.Repeat(`<license><permits type="usage">`+strings.Repeat("ai-train ", 100)+`</permits><payment type="crawl"><amount currency="USD">1</amount></payment></license>`, 10) +
		`</content></rsl>`))
	if err != nil {
		t.Fatal(err)
	}
	s := doc.Contents[0].Summary()
	if len(s) != 5 || s[4] != "… 6 more licences" || !strings.HasPrefix(s[0], "license 1 (line 1): usage ai-train ai-train") {
		t.Fatalf("Summary = %q", s)
	}
	for _, l := range s {
		if len(l) > maxQuoted+len("…") {
			t.Errorf("a line of %d bytes", len(l))
		}
	}
}
