package rsl

import (
	"testing"
)

// FuzzRSL: Parse never panics on any input; a document it accepts has
// content elements, each with a usable pattern; Match and Judge never
// panic and name only an element of the document, and a refusal always
// names the element that refused.
func FuzzRSL(f *testing.F) {
	f.Add([]byte(sample), "/premium/x", "ai-train")
	f.Add([]byte(`<rsl xmlns="https://rslstandard.org/rsl"><content url="/*a*b$"><license><prohibits>all</prohibits></license></content></rsl>`), "/aab", "search")
	f.Add([]byte(`<!DOCTYPE x><rsl/>`), "/", "")
	f.Add([]byte(`<rsl xmlns="https://rslstandard.org/rsl"><content url="http://h:80/"><license><permits type="usage">ai-all</permits></license></content></rsl>`), "/x", "ai-input")
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
			m := doc.Match("http", host, target)
			if m.Content == nil {
				continue
			}
			if m.Content != &doc.Contents[m.Content.Index] {
				t.Fatal("matched an element that is not the document's")
			}
			v := m.Content.Judge(usage)
			if v.Refused != (v.By != nil) || v.Refused && v.Server != "" {
				t.Fatalf("verdict %+v", v)
			}
		}
	})
}
