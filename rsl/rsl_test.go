package rsl

import (
	"errors"
	"strings"
	"testing"
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
// matching pattern applies, a prohibition refuses what it lists (all and
// ai-all included), a licence with permits refuses what it does not
// list, alternatives grant what one of them grants, and a server
// attribute is reported for what is granted.
func TestJudgeReadsPermitsAndProhibits(t *testing.T) {
	doc, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
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
		{"content without licence grants", "https", "example.com", "/nolicence/x", "ai-train", 2, false, false, "", ""},
		{"geo terms are not judged", "https", "example.com", "/open/x", "ai-train", 3, false, false, "", ""},
		{"ai-all prohibits ai-input, the other licence does not grant it", "https", "example.com", "/alternatives/x", "ai-input", 4, true, false, `<prohibits type="usage">ai-all</prohibits>`, ""},
		{"one alternative grants ai-index", "https", "example.com", "/alternatives/x", "ai-index", 4, false, false, "", ""},
		{"ai-all does not cover search: the first licence grants it", "https", "example.com", "/alternatives/x", "search", 4, false, false, "", ""},
		{"all and no type prohibit anything", "https", "example.com", "/everything", "search", 5, true, false, `<prohibits type="usage">all</prohibits>`, ""},
		{"$ anchors the end", "https", "example.com", "/everything/more", "search", 0, false, false, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := doc.Match(tc.scheme, tc.host, tc.target)
			if m.TooCostly {
				t.Fatal("too costly")
			}
			if tc.content < 0 {
				if m.Content != nil {
					t.Fatalf("matched %s", m.Content)
				}
				return
			}
			if m.Content == nil || m.Content.Index != tc.content {
				t.Fatalf("matched %v, want content %d", m.Content, tc.content)
			}
			v := m.Content.Judge(tc.usage)
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
	if m := doc.Match("https", "example.com", "/b"); m.Content != nil || m.TooCostly {
		t.Fatalf("got %+v", m)
	}
	if m := doc.Match("https", "example.com", "/a/%7Ex"); m.Content == nil {
		t.Fatal("a canonical target does not match")
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
	if v := doc.Match("https", "a.example", "/x").Content.Judge("search"); !v.Refused {
		t.Fatalf("got %+v", v)
	}
}
