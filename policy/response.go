package policy

import (
	"strings"

	"github.com/robotsgate/robotsgate/htmlmeta"
	"github.com/robotsgate/robotsgate/robots"
)

// The AI-usage signals of an origin's response, read after robots.txt has
// allowed the request and before the response is passed on: the header
// fields tdm-reservation (W3C TDMRep), Content-Usage (IETF aipref),
// Content-Signal (Cloudflare), X-Robots-Tag and Robots-Tag
// (draft-illyes-repext; noai, noml, noimageai), and, when usage.scan_html
// is on, the <meta> tags of an HTML head. Like robots.txt's preferences, a
// signal only refuses the purposes it concerns:
//
//   - tdm-reservation: 1 (header or meta): the training and text-and-data-
//     mining purposes (trainingPurposes);
//   - noai and noml (X-Robots-Tag, Robots-Tag or meta robots, for all
//     agents or scoped to the request's agent): the same purposes,
//     whatever the content type;
//   - noimageai: the same purposes, for an image response (Content-Type
//     image/*) only: it never refuses an HTML page, whose images are
//     fetched (and judged) separately;
//   - Content-Usage: the purposes the robots.txt Content-Usage lines
//     concern, through the same vocabulary ("train-ai=n" refuses train-ai,
//     train-genai and ai-train, "search=n" refuses search, ...);
//   - Content-Signal: the purposes the robots.txt Content-Signal line
//     concerns, through the same keys ("ai-train=no", "search=no",
//     "ai-input=no", "use=no" for every purpose).

// trainingPurposes are the purposes tdm-reservation, noai and noimageai
// concern: AI training, and text and data mining ("tdm"), which the EU's
// TDM exception (Directive 2019/790 art. 4) lets a rightholder reserve.
// Using content as the input of an AI system (ai-input, ai-use) and search
// are not training: these signals leave them alone.
var trainingPurposes = []string{"train-ai", "train-genai", "ai-train", "tdm"}

// ResponseSignal is an AI-usage signal of an origin's response that
// refuses a client's purpose.
type ResponseSignal struct {
	// Source is where it was read: a header field name ("X-Robots-Tag")
	// or, for a meta tag, its name attribute ("robots", "tdm-reservation",
	// an agent's token).
	Source string
	// Meta tells a <meta> tag from a header field.
	Meta bool
	// Value is the field's value or the tag's content as the origin sent
	// it ("FooBot: noai", "train-ai=n, search=y"), at most maxSignalValue
	// bytes.
	Value string
	// Directive is the part of Value that refuses ("noai", "train-ai=n",
	// "1").
	Directive string
	// Purpose is the client's purpose it refuses.
	Purpose string
	// Policy is the tdm-policy URL that came with a tdm-reservation, ""
	// if none.
	Policy string
	// Licence is the RSL licence a Link header or <link> tag named that
	// refused (Source says which, Value is its URL); nil for the other
	// signals.
	Licence *Licence
	// Unscanned: the response is an HTML page whose head could not be read
	// (usage.scan_html), Value says why; what it says of Purpose is
	// unknown (UsageUnknown under usage.on_unknown).
	Unscanned bool
}

// maxSignalValue bounds the value a ResponseSignal quotes: a header field
// may be long, an audit note should not be.
const maxSignalValue = 256

// String names the signal as the origin wrote it:
// `X-Robots-Tag: FooBot: noai` or `<meta name="robots" content="noai">`.
func (s ResponseSignal) String() string {
	if s.Meta {
		return `<meta name="` + s.Source + `" content="` + s.Value + `">`
	}
	return s.Source + ": " + s.Value
}

// Explain is a sentence (without a final period) saying what refused:
// `X-Robots-Tag: FooBot: noai, nofollow (noai) refuses the purpose
// train-ai`, with the tdm-policy URL when there is one.
func (s ResponseSignal) Explain() string {
	if s.Licence != nil {
		return s.Licence.Explain()
	}
	if s.Unscanned {
		return "the page's HTML head could not be read for its AI-usage signals (" + s.Value +
			"), so what it says of the purpose " + s.Purpose + " is unknown"
	}
	text := s.String()
	if !strings.EqualFold(s.Value, s.Directive) {
		text += " (" + s.Directive + ")"
	}
	text += " refuses the purpose " + s.Purpose
	if s.Policy != "" {
		text += " (tdm-policy " + s.Policy + ")"
	}
	return text
}

// ResponsePurposes returns the purposes an origin's response signals are
// to be checked for (ResponseJudge): the client's, when the
// request was allowed after robots.txt was consulted. It is nil for a
// client without purposes, for robots.txt itself, a bypass client, a site
// set to ignore robots.txt (robots.txt not consulted) and a request that
// is not allowed.
func (d *Decision) ResponsePurposes() []string {
	if d.Verdict != Allow || d.Robots == nil {
		return nil
	}
	return d.Request.Client.Purposes
}

// MetaConcerns reports whether a page's meta tags can refuse one of
// purposes: whether an HTML response is worth scanning for them.
func MetaConcerns(purposes []string) bool {
	_, ok := firstOf(purposes, trainingPurposes)
	return ok
}

// Head is what the relay read of an HTML response's head for the judge
// (usage.scan_html): its tags, or, when Unscanned is not "", why they
// could not be read (a content coding robotsgate does not decode, a head
// longer than htmlmeta.Limit, a body that failed), and then what the page
// says is unknown.
type Head struct {
	htmlmeta.Head
	Unscanned string
}

func metaPolicy(metas []htmlmeta.Meta) string {
	for _, m := range metas {
		if m.Name == "tdm-policy" {
			return m.Content
		}
	}
	return ""
}

// firstOf returns the first of purposes that is in set.
func firstOf(purposes, set []string) (string, bool) {
	for _, p := range purposes {
		for _, s := range set {
			if p == s {
				return p, true
			}
		}
	}
	return "", false
}

// colonDirectives are the X-Robots-Tag directives written "name: value",
// which a "FooBot:" scope must not be mistaken for.
var colonDirectives = []string{"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}

// robotsTagRefusal returns the refusing directive of one X-Robots-Tag
// value: noai or noml, or noimageai for an image, for every agent or in the scope
// of an agent token that names agent ("FooBot: noai, noimageai": a scope
// runs until the next one). Directives are compared ignoring ASCII case.
func robotsTagRefusal(value, agent string, image bool) (string, bool) {
	applies := true // no scope yet: every agent
	for len(value) > 0 {
		var item string
		item, value, _ = strings.Cut(value, ",")
		if name, rest, ok := strings.Cut(item, ":"); ok {
			name = strings.TrimSpace(name)
			if !isColonDirective(name) {
				applies, item = robots.NamesAgent(agent, name), rest
			}
		}
		if !applies {
			continue
		}
		for _, d := range directives(item) {
			if r, ok := trainingRule([]string{d}, image); ok {
				return r, true
			}
		}
	}
	return "", false
}

func isColonDirective(name string) bool {
	for _, d := range colonDirectives {
		if strings.EqualFold(name, d) {
			return true
		}
	}
	return false
}

// directives splits a list of robots directives at commas and white space
// ("noai, noimageai", "noai noimageai").
func directives(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
}

// isImage reports whether a Content-Type is an image's (image/*).
func isImage(contentType string) bool {
	const prefix = "image/"
	ct := strings.TrimSpace(contentType)
	return len(ct) > len(prefix) && strings.EqualFold(ct[:len(prefix)], prefix)
}
