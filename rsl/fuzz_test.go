package rsl

import (
	"testing"

	"github.com/robotsgate/robotsgate/origin"
)

// FuzzRSL: Parse never panics on any input; a document it accepts has
// content elements, each with a usable pattern; Match, Judge and Summary
// never panic and name only an element of the document, and a refusal
// always says why (the element, the unmet term, or that nothing permits).
func FuzzRSL(f *testing.F) {
	f.Add([]byte(sample), "/premium/x", "ai-train")
	f.Add([]byte(`<rsl xmlns="https://rslstandard.org/rsl"><content url="/*a*b$"><license><prohibits>all</prohibits></license></content></rsl>`), "/aab", "search")
	f.Add([]byte(`<!DOCTYPE x><rsl/>`), "/", "")
	f.Add([]byte(`<rsl xmlns="https://rslstandard.org/rsl"><content url="http://h:80/"><license><permits type="usage">ai-all</permits></license></content></rsl>`), "/x", "ai-input")
	f.Add([]byte(`<rsl xmlns="https://rslstandard.org/rsl"><content url=""><license><permits type="user">education</permits><payment type="crawl"><amount currency="USD">0.01</amount></payment><reporting type="audit" profile="https://p"/><x/></license></content></rsl>`), "/x", "search")
	f.Fuzz(func(t *testing.T, body []byte, target, usage string) {
		doc, err := Parse(body)
		if err != nil {
			if doc != nil {
				t.Fatal("a document with an error")
			}
			return
		}
		if len(doc.Contents) == 0 {
			t.Fatal("a document without content elements")
		}
		if doc.Size() <= 0 {
			t.Fatal("no size")
		}
		for _, host := range []string{"h", "example.com"} {
			m := doc.Match(origin.Origin{Scheme: "http", Host: host, Port: 80}, target, host == "h")
			if m.Content == nil {
				continue
			}
			if m.Content != &doc.Contents[m.Content.Index] {
				t.Fatal("matched an element that is not the document's")
			}
			for _, c := range []Client{{}, {User: "commercial", Country: "FR", Payments: []string{PaymentAll}, Reporting: []string{ReportingAll}}} {
				v := m.Content.Judge(usage, c, Options{GrantUnstated: host == "h"})
				named := v.By != nil || v.Unmet != nil || v.NotPermitted
				if v.Refused != named || v.Refused && (v.Server != "" || v.License != nil) || v.By != nil && v.Unmet != nil {
					t.Fatalf("verdict %+v", v)
				}
			}
			m.Content.Summary()
		}
	})
}
