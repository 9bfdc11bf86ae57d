// Package rsl reads RSL 1.0 documents (Really Simple Licensing,
// https://rslstandard.org/rsl, Recommendation of 2025-11-06): the XML
// licences a site names in robots.txt (License: lines), in Link response
// headers (rel="license", type="application/rsl+xml") or in an HTML
// <link rel="license">. It parses and judges; it does no I/O, and what a
// verdict means for a request is package policy's decision.
//
// What is read, and how:
//
//   - the root is <rsl> in the RSL namespace; each <content url="…"> names
//     digital assets, by a full URL or a path, with RFC 9309's pattern
//     rules ('*' any run of octets, a final '$' the end of the path),
//     matched with robots.MatchPattern on the canonical target as tdmrep
//     matches its locations. Of the elements that match a target, the one
//     with the longest pattern applies (as RFC 9309 chooses between rules),
//     the first of equals;
//   - a <content> has one or more <license> elements, each with
//     <permits type="usage"> and <prohibits type="usage"> lists of usages
//     (comma or white space separated): all, ai-all (ai-train, ai-input and
//     ai-index), ai-train, ai-input, ai-index, search, and any other token,
//     which only names itself. Elements of type user and geo are kept but
//     not judged (robotsgate knows neither the client's user type nor its
//     place); an element without a type is read as a usage one, the
//     conservative reading;
//   - a usage is refused by a licence when one of its <prohibits> lists it
//     (all and ai-all included), or when the licence has <permits
//     type="usage"> elements and none lists it: a licence grants what it
//     permits and no more. Several licences are alternatives: a usage one
//     of them grants is granted;
//   - a <content server="…"> names a licence server: a client must obtain a
//     licence token from it (Authorization: License <token>) even for a
//     free licence. A granted usage of such content is reported as
//     needing the server.
//
// Hostile documents are the normal case: at most MaxDocumentSize bytes are
// read, the nesting depth and the number of elements are bounded, a
// DOCTYPE is refused (no entity can be declared, let alone expanded: the
// decoder knows only XML's five predefined entities), the decoder is
// strict, and a document that breaks any of this is an error, which the
// caller treats as an unknown licence (never as no licence).
package rsl

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unsafe"

	"github.com/robotsgate/robotsgate/robots"
)

// Namespace is the RSL 1.0 XML namespace, which the root element must be
// in.
const Namespace = "https://rslstandard.org/rsl"

// MediaType is the media type of an RSL document (the type of a Link
// header or an HTML <link> that names one).
const MediaType = "application/rsl+xml"

// MaxDocumentSize bounds the bytes of a document that are parsed: a longer
// one is an error (ErrTooLarge), not a prefix judged as if it were whole.
const MaxDocumentSize = 500 << 10

// Bounds on a document's structure, each far beyond any real licence.
const (
	// MaxDepth bounds the nesting of elements.
	MaxDepth = 32
	// MaxElements bounds the number of elements.
	MaxElements = 20000
	// MaxMatchWork bounds the octets of the target that the wildcard
	// searches of one Match may examine between them, as
	// robots.MaxMatchWork does for a robots.txt.
	MaxMatchWork = robots.MaxMatchWork
)

// maxQuoted bounds the text of an element or attribute quoted in a
// message.
const maxQuoted = 256

// ErrTooLarge is matched (errors.Is) by the error of a document longer
// than MaxDocumentSize.
var ErrTooLarge = errors.New("rsl: document larger than MaxDocumentSize")

// The usages of RSL 1.0.
const (
	UsageAll     = "all"      // every usage
	UsageAIAll   = "ai-all"   // every AI usage: ai-train, ai-input, ai-index
	UsageAITrain = "ai-train" // training or fine-tuning AI models
	UsageAIInput = "ai-input" // input to AI models at inference (retrieval, grounding)
	UsageAIIndex = "ai-index" // building an index for AI applications
	UsageSearch  = "search"   // building a search index and showing results
)

// aiUsages are the usages ai-all stands for.
var aiUsages = []string{UsageAITrain, UsageAIInput, UsageAIIndex}

// Document is a parsed RSL document. Documents are shared and must not be
// modified.
type Document struct {
	// Contents are its <content> elements, in document order.
	Contents []Content
}

// Content is one <content> element.
type Content struct {
	// Index is its position among the document's <content> elements,
	// from 0.
	Index int
	// URL is its url attribute as written (trimmed); Server its server
	// attribute, "" when absent.
	URL, Server string
	// Line is the line it starts on, from 1.
	Line int
	// Licenses are its <license> elements, in order.
	Licenses []License

	// scheme and host are the URL's, lower-cased, for a full URL; "" for
	// a path. pattern is the path pattern as matched (canonical).
	scheme, host, pattern string
}

// License is one <license> element.
type License struct {
	// Line is the line it starts on.
	Line int
	// Terms are its <permits> and <prohibits> elements, in order.
	Terms []Terms
}

// Terms is one <permits> or <prohibits> element.
type Terms struct {
	// Prohibits tells a <prohibits> from a <permits>.
	Prohibits bool
	// Type is its type attribute ("usage", "user", "geo"), "usage" when
	// absent.
	Type string
	// Values are the items it lists, lower-cased.
	Values []string
	// Line is the line it starts on.
	Line int
}

// String writes the element back: `<prohibits type="usage">ai-train,
// ai-input</prohibits>`, cut to a few hundred bytes.
func (t *Terms) String() string {
	name := "permits"
	if t.Prohibits {
		name = "prohibits"
	}
	list := strings.Join(t.Values, ", ")
	if len(list) > maxQuoted {
		list = strings.ToValidUTF8(list[:maxQuoted], "") + "…"
	}
	return fmt.Sprintf("<%s type=%q>%s</%s>", name, t.Type, list, name)
}

// String names the element: `<content url="/premium/*">` (line 3), its
// url cut short.
func (c *Content) String() string {
	return fmt.Sprintf("<content url=%s> (line %d)", quote(c.URL), c.Line)
}

// quote quotes s for a message (strconv.Quote), cut to maxQuoted bytes.
func quote(s string) string {
	if len(s) > maxQuoted {
		s = strings.ToValidUTF8(s[:maxQuoted], "") + "…"
	}
	return strconv.Quote(s)
}

// Size is what d keeps on the heap, approximately, for a cache's byte
// bound.
func (d *Document) Size() int64 {
	if d == nil {
		return 0
	}
	n := int64(unsafe.Sizeof(*d)) + int64(cap(d.Contents))*int64(unsafe.Sizeof(Content{}))
	for i := range d.Contents {
		c := &d.Contents[i]
		n += int64(len(c.URL)+len(c.Server)+len(c.scheme)+len(c.host)+len(c.pattern)) + int64(cap(c.Licenses))*int64(unsafe.Sizeof(License{}))
		for _, l := range c.Licenses {
			n += int64(cap(l.Terms)) * int64(unsafe.Sizeof(Terms{}))
			for _, t := range l.Terms {
				n += int64(len(t.Type)) + int64(cap(t.Values))*16
				for _, v := range t.Values {
					n += int64(len(v))
				}
			}
		}
	}
	return n
}

// Parse reads an RSL document. The error says why the document cannot be
// judged: larger than MaxDocumentSize, not well-formed XML, a DOCTYPE, too
// deep or too many elements, a root other than <rsl> in the RSL namespace,
// no <content> element, or a <content> without a usable url.
func Parse(body []byte) (*Document, error) {
	if len(body) > MaxDocumentSize {
		return nil, ErrTooLarge
	}
	p := parser{dec: xml.NewDecoder(bytes.NewReader(body)), body: body}
	p.dec.Strict = true
	// CharsetReader stays nil: a document in another encoding than UTF-8
	// is an error, not a guess.
	doc, err := p.parse()
	if err != nil {
		return nil, fmt.Errorf("rsl: line %d: %w", p.line(), err)
	}
	return doc, nil
}

type parser struct {
	dec      *xml.Decoder
	body     []byte
	depth    int
	elements int
}

// line is the line the decoder has read up to.
func (p *parser) line() int {
	off := min(int(p.dec.InputOffset()), len(p.body))
	return 1 + bytes.Count(p.body[:off], []byte("\n"))
}

// next returns the next token, counting depth and elements.
func (p *parser) next() (xml.Token, error) {
	tok, err := p.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch tok.(type) {
	case xml.StartElement:
		p.depth++
		p.elements++
		if p.depth > MaxDepth {
			return nil, fmt.Errorf("elements nested deeper than %d", MaxDepth)
		}
		if p.elements > MaxElements {
			return nil, fmt.Errorf("more than %d elements", MaxElements)
		}
	case xml.EndElement:
		p.depth--
	case xml.Directive:
		return nil, errors.New("a DOCTYPE or other directive: refused (no entity may be declared)")
	}
	return tok, nil
}

func (p *parser) parse() (*Document, error) {
	// The root element, after the prolog.
	var root xml.StartElement
	for {
		tok, err := p.next()
		if err != nil {
			return nil, err
		}
		if se, ok := tok.(xml.StartElement); ok {
			root = se
			break
		}
		if cd, ok := tok.(xml.CharData); ok && len(bytes.TrimSpace(cd)) > 0 {
			return nil, errors.New("text before the root element")
		}
	}
	if root.Name.Local != "rsl" || root.Name.Space != Namespace {
		return nil, fmt.Errorf("the root element is <%s> in namespace %q, not <rsl> in %q", root.Name.Local, root.Name.Space, Namespace)
	}
	doc := &Document{}
	for {
		tok, err := p.next()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Space == Namespace && t.Name.Local == "content" {
				c, err := p.content(t, len(doc.Contents))
				if err != nil {
					return nil, err
				}
				doc.Contents = append(doc.Contents, c)
				continue
			}
			if err := p.skip(); err != nil {
				return nil, err
			}
		case xml.EndElement: // the root's: nothing may follow but white space, comments and PIs
			if err := p.rest(); err != nil {
				return nil, err
			}
			if len(doc.Contents) == 0 {
				return nil, errors.New("no <content> element")
			}
			return doc, nil
		}
	}
}

// rest reads what follows the root element: only white space, comments
// and processing instructions may.
func (p *parser) rest() error {
	for {
		tok, err := p.dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return errors.New("a second root element")
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return errors.New("text after the root element")
			}
		case xml.Directive:
			return errors.New("a directive after the root element")
		}
	}
}

// skip reads to the end of the element just started.
func (p *parser) skip() error {
	depth := p.depth
	for p.depth >= depth {
		if _, err := p.next(); err != nil {
			return err
		}
	}
	return nil
}

func attr(se xml.StartElement, name string) (string, bool) {
	for _, a := range se.Attr {
		if a.Name.Space == "" && a.Name.Local == name {
			return strings.TrimSpace(a.Value), true
		}
	}
	return "", false
}

// content reads a <content> element.
func (p *parser) content(se xml.StartElement, index int) (Content, error) {
	c := Content{Index: index, Line: p.line()}
	u, ok := attr(se, "url")
	if !ok || u == "" {
		return c, errors.New("a <content> without a url attribute")
	}
	c.URL = u
	if err := c.setPattern(); err != nil {
		return c, err
	}
	c.Server, _ = attr(se, "server")
	for {
		tok, err := p.next()
		if err != nil {
			return c, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Space == Namespace && t.Name.Local == "license" {
				l, err := p.license()
				if err != nil {
					return c, err
				}
				c.Licenses = append(c.Licenses, l)
				continue
			}
			if err := p.skip(); err != nil {
				return c, err
			}
		case xml.EndElement:
			return c, nil
		}
	}
}

// setPattern reads the url attribute: a full http(s) URL, whose scheme and
// host must then be the target's, or a path ('/' or '*' first).
func (c *Content) setPattern() error {
	path := c.URL
	if scheme, rest, ok := strings.Cut(c.URL, "://"); ok {
		scheme = strings.ToLower(scheme)
		if scheme != "http" && scheme != "https" {
			return fmt.Errorf("<content url=%s>: not an http(s) URL or a path", quote(c.URL))
		}
		host, p, _ := strings.Cut(rest, "/")
		host, _, _ = strings.Cut(host, "?")
		if host == "" || strings.ContainsAny(host, "@*") {
			return fmt.Errorf("<content url=%s>: no usable host", quote(c.URL))
		}
		c.scheme, c.host = scheme, normalHost(scheme, strings.ToLower(host))
		path = "/" + p
	}
	if path == "" || path[0] != '/' && path[0] != '*' {
		return fmt.Errorf("<content url=%s>: not an http(s) URL or a path", quote(c.URL))
	}
	c.pattern = robots.CanonicalPattern(path)
	return nil
}

// normalHost drops the scheme's default port from host[:port].
func normalHost(scheme, host string) string {
	if scheme == "http" {
		return strings.TrimSuffix(host, ":80")
	}
	return strings.TrimSuffix(host, ":443")
}

// license reads a <license> element.
func (p *parser) license() (License, error) {
	l := License{Line: p.line()}
	for {
		tok, err := p.next()
		if err != nil {
			return l, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Space == Namespace && (t.Name.Local == "permits" || t.Name.Local == "prohibits") {
				terms, err := p.terms(t)
				if err != nil {
					return l, err
				}
				l.Terms = append(l.Terms, terms)
				continue
			}
			if err := p.skip(); err != nil {
				return l, err
			}
		case xml.EndElement:
			return l, nil
		}
	}
}

// terms reads a <permits> or <prohibits> element: its text, a list.
func (p *parser) terms(se xml.StartElement) (Terms, error) {
	t := Terms{Prohibits: se.Name.Local == "prohibits", Line: p.line(), Type: "usage"}
	if typ, ok := attr(se, "type"); ok && typ != "" {
		t.Type = strings.ToLower(typ)
	}
	var text []byte
	for {
		tok, err := p.next()
		if err != nil {
			return t, err
		}
		switch v := tok.(type) {
		case xml.CharData:
			text = append(text, v...)
		case xml.StartElement:
			return t, fmt.Errorf("<%s> inside <%s>", v.Name.Local, se.Name.Local)
		case xml.EndElement:
			for _, item := range strings.FieldsFunc(string(text), func(r rune) bool {
				return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
			}) {
				t.Values = append(t.Values, strings.ToLower(item))
			}
			return t, nil
		}
	}
}

// Match is the <content> element that applies to a target.
type Match struct {
	// Content is the element; nil when none matches or TooCostly.
	Content *Content
	// TooCostly reports that the patterns would have needed more than
	// MaxMatchWork octets of comparisons: no element is named, and the
	// caller must judge conservatively.
	TooCostly bool
}

// Match returns the <content> element that applies to the target of a
// request to scheme://host (host[:port], the port omitted when it is the
// scheme's default): of the elements whose url matches, the one with the
// longest pattern, the first of equals. A full url matches only its own
// scheme and host. A nil Document matches nothing.
func (d *Document) Match(scheme, host, target string) Match {
	if d == nil {
		return Match{}
	}
	scheme = strings.ToLower(scheme)
	host = normalHost(scheme, strings.ToLower(host))
	target = robots.MatchTarget(target)
	work := 0
	var best *Content
	for i := range d.Contents {
		c := &d.Contents[i]
		if c.host != "" && (c.scheme != scheme || c.host != host) {
			continue
		}
		if robots.MatchPattern(c.pattern, target, &work) && (best == nil || len(c.pattern) > len(best.pattern)) {
			best = c
		}
		if work > MaxMatchWork {
			return Match{TooCostly: true}
		}
	}
	return Match{Content: best}
}

// Verdict is what a <content> element says of one usage.
type Verdict struct {
	// Refused reports that no licence grants the usage; By is the element
	// that refused it in the first licence (a <prohibits> listing it, or,
	// when NotPermitted, the <permits> that does not), nil when Refused is
	// false.
	Refused      bool
	NotPermitted bool
	By           *Terms
	// Server is the licence server a granted usage needs a token from
	// (the content's server attribute), "" when none.
	Server string
}

// Judge says whether the content's licences grant usage, an RSL usage
// ("ai-train"; any other token names only itself, which all covers).
// Content without a licence grants everything.
func (c *Content) Judge(usage string) Verdict {
	var first Verdict
	for i := range c.Licenses {
		v := c.Licenses[i].judge(usage)
		if !v.Refused {
			return Verdict{Server: c.Server}
		}
		if first.By == nil {
			first = v
		}
	}
	if len(c.Licenses) == 0 {
		return Verdict{Server: c.Server}
	}
	return first
}

// judge is one licence's verdict on usage.
func (l *License) judge(usage string) Verdict {
	var permits *Terms
	granted := false
	for i := range l.Terms {
		t := &l.Terms[i]
		if t.Type != "usage" {
			continue
		}
		covered := Covers(t.Values, usage)
		switch {
		case t.Prohibits && covered:
			return Verdict{Refused: true, By: t}
		case !t.Prohibits:
			if permits == nil {
				permits = t
			}
			granted = granted || covered
		}
	}
	if permits != nil && !granted {
		return Verdict{Refused: true, NotPermitted: true, By: permits}
	}
	return Verdict{}
}

// Covers reports whether a list of usages names usage: itself, all, or
// ai-all for an AI usage.
func Covers(list []string, usage string) bool {
	for _, v := range list {
		switch {
		case v == usage, v == UsageAll:
			return true
		case v == UsageAIAll:
			for _, a := range aiUsages {
				if a == usage {
					return true
				}
			}
		}
	}
	return false
}
