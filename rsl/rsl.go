// Package rsl reads RSL 1.0 documents (Really Simple Licensing,
// https://rslstandard.org/rsl, RSL-SPEC-1.0, a Recommendation first
// published 2025-11-06 and amended through its errata page): the XML
// licences a site names in robots.txt (License: lines), in Link response
// headers (rel="license", type="application/rsl+xml") or in an HTML <link
// rel="license">. It parses and judges; it does no I/O, and what a verdict
// means for a request is package policy's decision.
//
// Only the Recommendation's front matter, element list and errata could be
// read first-hand here; its sections 3 and 4 are known through quotes by
// third parties (an RSL reference summary citing §3.4.1, §3.7, §3.12 and
// §4.9, published licence generators and validators). Every reading that
// rests on them says so (judge.go), and where they leave a case open the
// reading that refuses more is taken.
//
// What is read, and how:
//
//   - the root is <rsl> in the RSL namespace; each <content url="…"> names
//     digital assets, by a full URL (its scheme, host and port compared in
//     the canonical form of package origin), a path with RFC 9309's pattern
//     rules ('*' any run of octets, a final '$' the end of the path),
//     matched with robots.MatchPattern on the canonical target as tdmrep
//     matches its locations, or the empty url, which names the resource
//     whose Link header or <link> tag named the document (Match);
//   - a <content> has <license> elements, each with <permits> and
//     <prohibits> of type usage, user or geo (an element without a type is
//     read as a usage one, the conservative reading), <payment> terms and
//     <reporting> obligations, which judge.go reads;
//   - a <content server="…"> names a licence server: a client must obtain a
//     licence token from it (Authorization: License <token>) even for a
//     free licence.
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

	"github.com/robotsgate/robotsgate/origin"
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

	// origin is the URL's, in canonical form, for a full URL; the zero
	// Origin for a path or the empty url. pattern is the path pattern as
	// matched (canonical), "" for the empty url.
	origin  origin.Origin
	pattern string
}

// License is one <license> element.
type License struct {
	// Index is its position among its content's licences, from 0; Line
	// the line it starts on.
	Index, Line int
	// Terms are its <permits> and <prohibits> elements, in order.
	Terms []Terms
	// Payments are its <payment> elements, Reports its <reporting> ones.
	Payments []Payment
	Reports  []Reporting
	// Unknown are the elements in the RSL namespace it has that robotsgate
	// does not know (a term it cannot judge), by local name.
	Unknown []string
}

// Payment is one <payment> element: what the licence asks in return.
type Payment struct {
	// Type is its type attribute, lower-cased ("crawl", "free"); "" when
	// absent.
	Type string
	// Amounts are its <amount> elements ("0.015 USD"); Standard and Custom
	// the URLs of its <standard> and <custom> elements; Accepts the types
	// of its <accepts> elements.
	Amounts, Standard, Custom, Accepts []string
	Line                               int
}

// Reporting is one <reporting> element: an obligation to report use.
type Reporting struct {
	// Type is its type attribute (telemetry, provenance, audit), Profile
	// its profile (an opaque URI naming the reporting protocol), Endpoint
	// its endpoint; each "" when absent.
	Type, Profile, Endpoint string
	Line                    int
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
		n += int64(len(c.URL)+len(c.Server)+len(c.origin.Host)+len(c.pattern)) + int64(cap(c.Licenses))*int64(unsafe.Sizeof(License{}))
		for _, l := range c.Licenses {
			n += int64(cap(l.Terms))*int64(unsafe.Sizeof(Terms{})) + int64(cap(l.Payments))*int64(unsafe.Sizeof(Payment{})) +
				int64(cap(l.Reports))*int64(unsafe.Sizeof(Reporting{})) + int64(cap(l.Unknown))*16
			for _, pay := range l.Payments {
				for _, list := range [][]string{pay.Amounts, pay.Standard, pay.Custom, pay.Accepts} {
					n += int64(cap(list)) * 16
					for _, v := range list {
						n += int64(len(v))
					}
				}
				n += int64(len(pay.Type))
			}
			for _, r := range l.Reports {
				n += int64(len(r.Type) + len(r.Profile) + len(r.Endpoint))
			}
			for _, u := range l.Unknown {
				n += int64(len(u))
			}
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
// no <content> element, or a <content> without a usable url (an empty url
// is usable: it names the linking resource).
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
	if !ok {
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
				l, err := p.license(len(c.Licenses))
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

// setPattern reads the url attribute: a full http(s) URL, whose scheme,
// host and port must then be the target's (compared as package origin
// spells them: lower case, IDNA A-labels, no trailing dot, no default
// port), a path ('/' or '*' first), or "" (the linking resource, Match).
func (c *Content) setPattern() error {
	if c.URL == "" {
		return nil
	}
	path := c.URL
	if scheme, rest, ok := strings.Cut(c.URL, "://"); ok {
		scheme = strings.ToLower(scheme)
		if scheme != "http" && scheme != "https" {
			return fmt.Errorf("<content url=%s>: not an http(s) URL or a path", quote(c.URL))
		}
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		host, p := rest[:end], rest[end:]
		if host == "" || strings.ContainsAny(host, "@*") {
			return fmt.Errorf("<content url=%s>: no usable host", quote(c.URL))
		}
		o, err := origin.New(scheme, host)
		if err != nil {
			return fmt.Errorf("<content url=%s>: no usable host: %s", quote(c.URL), origin.Reason(err))
		}
		c.origin, path = o, p
		if path == "" || path[0] != '/' {
			path = "/" + path
		}
	}
	if path == "" || path[0] != '/' && path[0] != '*' {
		return fmt.Errorf("<content url=%s>: not an http(s) URL or a path", quote(c.URL))
	}
	c.pattern = robots.CanonicalPattern(path)
	return nil
}

// license reads a <license> element.
func (p *parser) license(index int) (License, error) {
	l := License{Index: index, Line: p.line()}
	for {
		tok, err := p.next()
		if err != nil {
			return l, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Space != Namespace {
				if err := p.skip(); err != nil { // another vocabulary's: an extension, ignored
					return l, err
				}
				continue
			}
			switch t.Name.Local {
			case "permits", "prohibits":
				terms, err := p.terms(t)
				if err != nil {
					return l, err
				}
				l.Terms = append(l.Terms, terms)
				continue
			case "payment":
				pay, err := p.payment(t)
				if err != nil {
					return l, err
				}
				l.Payments = append(l.Payments, pay)
				continue
			case "reporting":
				r := Reporting{Line: p.line()}
				r.Type, _ = attr(t, "type")
				r.Profile, _ = attr(t, "profile")
				r.Endpoint, _ = attr(t, "endpoint")
				r.Type = strings.ToLower(r.Type)
				l.Reports = append(l.Reports, r)
			case "legal":
				// Warranties and disclaimers: what the site asserts, no
				// term a client must meet.
			default:
				if len(l.Unknown) < maxUnknown {
					l.Unknown = append(l.Unknown, t.Name.Local)
				}
			}
			if err := p.skip(); err != nil {
				return l, err
			}
		case xml.EndElement:
			return l, nil
		}
	}
}

// maxUnknown bounds the unknown elements a License keeps (one is enough to
// make its terms unmet).
const maxUnknown = 8

// maxPaymentItems bounds the children of each kind a Payment keeps.
const maxPaymentItems = 8

// payment reads a <payment> element: its type and the text of its
// <amount currency>, <standard>, <custom> and the types of its <accepts>.
func (p *parser) payment(se xml.StartElement) (Payment, error) {
	pay := Payment{Line: p.line()}
	pay.Type, _ = attr(se, "type")
	pay.Type = strings.ToLower(pay.Type)
	for {
		tok, err := p.next()
		if err != nil {
			return pay, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			var list *[]string
			var extra string
			switch {
			case t.Name.Space != Namespace:
			case t.Name.Local == "amount":
				list = &pay.Amounts
				if cur, ok := attr(t, "currency"); ok {
					extra = " " + cur
				}
			case t.Name.Local == "standard":
				list = &pay.Standard
			case t.Name.Local == "custom":
				list = &pay.Custom
			case t.Name.Local == "accepts":
				list = &pay.Accepts
				extra, _ = attr(t, "type")
			}
			text, err := p.text()
			if err != nil {
				return pay, err
			}
			if list == &pay.Accepts {
				text = ""
			}
			if list != nil && len(*list) < maxPaymentItems {
				*list = append(*list, clipText(strings.TrimSpace(text+extra)))
			}
		case xml.EndElement:
			return pay, nil
		}
	}
}

// text reads the character data of the element just started, through its
// end (child elements skipped).
func (p *parser) text() (string, error) {
	depth := p.depth
	var b []byte
	for p.depth >= depth {
		tok, err := p.next()
		if err != nil {
			return "", err
		}
		if cd, ok := tok.(xml.CharData); ok && p.depth == depth && len(b) < maxQuoted {
			b = append(b, cd...)
		}
	}
	return string(b), nil
}

// clipText cuts s to maxQuoted bytes.
func clipText(s string) string {
	if len(s) > maxQuoted {
		s = strings.ToValidUTF8(s[:maxQuoted], "") + "…"
	}
	return s
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
