// Package htmlmeta reads the <meta name=… content=…> and <link rel=…
// href=…> tags of an HTML document's head, with golang.org/x/net/html's
// tokenizer (the HTML standard's tokenization: comments, <script> and <style> contents, CDATA
// and attribute quoting are what a browser sees, not what a regular
// expression guesses), reading no more than a limit.
//
// It reports the tags it finds and must not interpret them: what a tag
// means for a client is package policy's decision.
package htmlmeta

import (
	"errors"
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Limit is how much of a document the proxy reads for its head: 64 KiB.
const Limit = 64 << 10

// Meta is one <meta> tag with a name and a content attribute.
type Meta struct {
	// Name is the name attribute, trimmed and lower-cased ("robots").
	Name string
	// Content is the content attribute as the document gives it (character
	// references decoded), trimmed.
	Content string
}

// Scan reads the head of the HTML document r and returns its meta tags
// that have both a name and a content attribute, in document order. It
// stops at </head>, at <body> or after limit bytes of r, whichever comes
// first, and never reads more than limit bytes from r: what follows the
// limit cannot change the result. A tag cut off by the limit is not
// returned. The error is r's, other than io.EOF.
func Scan(r io.Reader, limit int64) ([]Meta, error) {
	h, err := ScanHead(r, limit)
	return h.Metas, err
}

// MaxLinks bounds the <link> tags a Head keeps (the first ones): a page
// may have many stylesheets, and only a few of its links are ever read.
const MaxLinks = 64

// Link is one <link> tag with a rel and an href attribute.
type Link struct {
	// Rel is the rel attribute, trimmed and lower-cased ("license",
	// "stylesheet"; a list of tokens as written).
	Rel string
	// Href is the href attribute as the document gives it (character
	// references decoded), trimmed.
	Href string
	// Type is the type attribute, trimmed and lower-cased; "" when absent.
	Type string
}

// Head is what Scan finds in a document's head: its meta tags and the
// first MaxLinks of its link tags.
type Head struct {
	Metas []Meta
	Links []Link
	// Complete reports that the head was read to its end: </head>, <body>
	// or the end of the document came within the limit. A head cut at the
	// limit may have tags beyond it.
	Complete bool
}

// ScanHead is Scan, also returning the <link> tags with a rel and an href
// (at most MaxLinks), in document order.
func ScanHead(r io.Reader, limit int64) (Head, error) {
	lr := &io.LimitedReader{R: r, N: max(limit, 0)}
	z := html.NewTokenizer(lr)
	var h Head
	for {
		switch z.Next() {
		case html.ErrorToken:
			if err := z.Err(); !errors.Is(err, io.EOF) {
				return h, err
			}
			h.Complete = lr.N > 0 // the document ended, not the limit
			return h, nil
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch atom.Lookup(name) {
			case atom.Body:
				h.Complete = true
				return h, nil
			case atom.Meta:
				if m, ok := readMeta(z, hasAttr); ok {
					h.Metas = append(h.Metas, m)
				}
			case atom.Link:
				if l, ok := readLink(z, hasAttr); ok && len(h.Links) < MaxLinks {
					h.Links = append(h.Links, l)
				}
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); atom.Lookup(name) == atom.Head {
				h.Complete = true
				return h, nil
			}
		}
	}
}

// readLink reads the attributes of a <link> tag: the first rel, href and
// type.
func readLink(z *html.Tokenizer, more bool) (Link, bool) {
	var l Link
	var hasRel, hasHref, hasType bool
	for more {
		var key, val []byte
		key, val, more = z.TagAttr()
		switch {
		case !hasRel && string(key) == "rel":
			l.Rel, hasRel = strings.ToLower(strings.TrimSpace(string(val))), true
		case !hasHref && string(key) == "href":
			l.Href, hasHref = strings.TrimSpace(string(val)), true
		case !hasType && string(key) == "type":
			l.Type, hasType = strings.ToLower(strings.TrimSpace(string(val))), true
		}
	}
	return l, hasRel && hasHref && l.Rel != "" && l.Href != ""
}

// readMeta reads the attributes of a <meta> tag: the first name and the
// first content (as an HTML parser keeps the first of duplicates).
func readMeta(z *html.Tokenizer, more bool) (Meta, bool) {
	var m Meta
	var hasName, hasContent bool
	for more {
		var key, val []byte
		key, val, more = z.TagAttr()
		switch {
		case !hasName && string(key) == "name":
			m.Name, hasName = strings.ToLower(strings.TrimSpace(string(val))), true
		case !hasContent && string(key) == "content":
			m.Content, hasContent = strings.TrimSpace(string(val)), true
		}
	}
	return m, hasName && hasContent && m.Name != ""
}
