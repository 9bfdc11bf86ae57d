package rsl

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots"
)

// How a <content> is judged. The Recommendation's §3 (the document model)
// and §3.4.1 (the usage and user vocabularies) are known here through
// third-party quotes only (see the package comment); they say that the
// order of licences does not change what they mean, that all the terms
// that apply are read together and the most restrictive combination is
// honoured (<prohibits> over <permits>), that a <permits type="usage">
// is a closed list, that a <payment> left out means free, and that a
// client that cannot comply with a <reporting> profile must treat the use
// as not licensed. robotsgate reads that as follows:
//
//   - a prohibition of any licence of the <content> applies to the asset:
//     a <prohibits type="usage"> listing the usage (all and ai-all
//     included), a <prohibits type="user"> listing the client's user type
//     or a <prohibits type="geo"> listing its country refuse, whatever
//     another licence permits. A client that declares no user type (no
//     country) cannot show that a user (geo) prohibition does not concern
//     it, and is refused too; so is a <prohibits> of a type robotsgate
//     does not know. Inside one licence, a narrower permission does not
//     lift a broader prohibition ("permits ai-input" with "prohibits
//     all"): no quote says that specificity wins there, so the
//     prohibition does.
//   - each licence is an offer: it grants the usages its <permits
//     type="usage"> list (a closed list), or, without one, those its
//     <prohibits type="usage"> do not list. A licence that states no usage
//     at all (empty, or only <payment>, <legal>, user or geo terms) grants
//     nothing: a use not permitted is not licensed (Options.GrantUnstated
//     turns it into "grants every usage it does not prohibit"). A
//     <content> without a licence is read as one such licence.
//   - an offer the client takes must be one whose terms it meets: its
//     <permits type="user"> lists the client's user type, its <permits
//     type="geo"> its country (EU stands for the member states), each
//     <payment> is free (type free, or no type and nothing in it) or of a
//     type the client accepts, each <reporting> has a profile the client
//     complies with, and it has no element in the RSL namespace that
//     robotsgate does not know. The usage is granted when one licence that
//     grants it is met; when every one that grants it has a term the
//     client does not meet, it is refused, naming the first such term of
//     the first of them.
//   - the licence server of the <content> (server="…") is reported for a
//     granted usage: a token is needed even for a free licence.

// Client is what a client declares of itself for the terms of a licence
// (the clients entry's rsl_user, country, accept_payment and
// accept_reporting).
type Client struct {
	// User is its user type (commercial, non-commercial, education,
	// government, personal), lower case; "" when undeclared.
	User string
	// Country is its ISO 3166-1 alpha-2 code, upper case; "" when
	// undeclared.
	Country string
	// Payments are the payment types it accepts (the <payment> types,
	// PaymentAll for any, an unstated or unknown type included).
	Payments []string
	// Reporting are the reporting profiles it complies with (ReportingAll
	// for any).
	Reporting []string
}

// PaymentAll and ReportingAll, in Client.Payments and Client.Reporting,
// accept every payment term and every reporting profile.
const (
	PaymentAll   = "all"
	ReportingAll = "all"
)

// PaymentTypes are the payment types of RSL 1.0 (as third parties quote
// §3.7).
var PaymentTypes = []string{"purchase", "subscription", "training", "crawl", "use", "contribution", "attribution", "free"}

// UserTypes are the user types of RSL 1.0 (as third parties quote
// §3.4.1).
var UserTypes = []string{"commercial", "non-commercial", "education", "government", "personal"}

// euMembers are the countries "EU" stands for in a geo list: the member
// states of the European Union.
var euMembers = []string{"AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GR", "HR", "HU", "IE", "IT",
	"LT", "LU", "LV", "MT", "NL", "PL", "PT", "RO", "SE", "SI", "SK"}

// Options are the readings an operator may relax.
type Options struct {
	// GrantUnstated: a licence that states no usage grants every usage it
	// does not prohibit (usage.rsl_unstated_usage: grant), instead of
	// none.
	GrantUnstated bool
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
// request to o: of the elements whose url matches, the one with the
// longest pattern, the first of equals. A full url matches only its own
// origin (compared canonically). The empty url names the resource whose
// Link header or <link> tag named the document (linked true; the
// Recommendation allows it where an association defines the scope, as
// third parties quote it) and matches it before any pattern; for a
// document named by robots.txt it names nothing (see HasEmptyURL). A nil
// Document matches nothing.
func (d *Document) Match(o origin.Origin, target string, linked bool) Match {
	if d == nil {
		return Match{}
	}
	target = robots.MatchTarget(target)
	work := 0
	var best *Content
	bestLen := -1
	for i := range d.Contents {
		c := &d.Contents[i]
		switch {
		case c.URL == "":
			if linked && bestLen < math.MaxInt {
				best, bestLen = c, math.MaxInt
			}
			continue
		case c.origin.Scheme != "" && c.origin != o:
			continue
		}
		if robots.MatchPattern(c.pattern, target, &work) && len(c.pattern) > bestLen {
			best, bestLen = c, len(c.pattern)
		}
		if work > MaxMatchWork {
			return Match{TooCostly: true}
		}
	}
	return Match{Content: best}
}

// HasEmptyURL returns the first <content url=""> of the document, nil if
// none: in a document robots.txt names, which no page links, it names no
// asset, and the document cannot be judged as its site meant it.
func (d *Document) HasEmptyURL() *Content {
	for i := range d.Contents {
		if d.Contents[i].URL == "" {
			return &d.Contents[i]
		}
	}
	return nil
}

// Verdict is what a <content> element says of one usage for one client.
type Verdict struct {
	// Refused reports that the usage is not licensed to the client.
	Refused bool
	// By is the element that refused it: a <prohibits> (of any licence),
	// or, when NotPermitted, the <permits type="usage"> of the first
	// licence, which does not list it (nil when no licence states a
	// usage). Nil when Refused is false, and when Unmet says why.
	By *Terms
	// NotPermitted: no licence grants the usage.
	NotPermitted bool
	// Unmet is the term the client does not meet of the first licence
	// that grants the usage, when every licence that grants it has one.
	Unmet *Unmet
	// License is the licence whose offer the client meets, when granted;
	// Server the licence server it needs a token from (the content's
	// server attribute), "" when none.
	License *License
	Server  string
}

// Unmet is a term of a licence a client does not meet.
type Unmet struct {
	// Kind is what the term is about: "user", "geo", "payment",
	// "reporting" or "element" (an element robotsgate does not know).
	Kind string
	// Element is the term as written: `<payment type="crawl"> (0.015 USD)`;
	// Line its line.
	Element string
	Line    int
	// Key is the clients entry's key that would meet it ("rsl_user",
	// "country", "accept_payment", "accept_reporting"); "" for none.
	Key string
	// License is the licence it belongs to.
	License *License
}

// String says what is unmet: `<payment type="crawl"> (0.015 USD, line
// 6) of licence 1`.
func (u *Unmet) String() string {
	return fmt.Sprintf("%s (line %d) of <license> %d (line %d)", u.Element, u.Line, u.License.Index+1, u.License.Line)
}

// Judge says whether the content's licences license usage, an RSL usage
// ("ai-train"; any other token names only itself, which all covers), to
// client, as the comment at the top of this file reads them.
func (c *Content) Judge(usage string, client Client, opts Options) Verdict {
	if v, ok := c.prohibited(usage, client); ok {
		return v
	}
	licenses := c.Licenses
	if len(licenses) == 0 {
		licenses = []License{{Line: c.Line}} // read as one licence that states nothing
	}
	var permits *Terms
	var unmet *Unmet
	for i := range licenses {
		l := &licenses[i]
		granted, p := l.grants(usage, opts)
		if permits == nil {
			permits = p
		}
		if !granted {
			continue
		}
		u := l.unmet(client)
		if u == nil {
			if len(c.Licenses) == 0 {
				l = nil
			}
			return Verdict{License: l, Server: c.Server}
		}
		if unmet == nil {
			unmet = u
		}
	}
	if unmet != nil {
		return Verdict{Refused: true, Unmet: unmet}
	}
	return Verdict{Refused: true, NotPermitted: true, By: permits}
}

// prohibited returns the refusal by a prohibition of any licence: of the
// usage first, then of the client's user type or country, or of a type
// robotsgate does not know.
func (c *Content) prohibited(usage string, client Client) (Verdict, bool) {
	for i := range c.Licenses {
		for j := range c.Licenses[i].Terms {
			if t := &c.Licenses[i].Terms[j]; t.Prohibits && t.Type == "usage" && Covers(t.Values, usage) {
				return Verdict{Refused: true, By: t}, true
			}
		}
	}
	for i := range c.Licenses {
		for j := range c.Licenses[i].Terms {
			t := &c.Licenses[i].Terms[j]
			if !t.Prohibits || t.Type == "usage" {
				continue
			}
			var hit bool
			switch t.Type {
			case "user":
				hit = client.User == "" || slices.Contains(t.Values, client.User)
			case "geo":
				hit = client.Country == "" || inGeo(t.Values, client.Country)
			default:
				hit = true
			}
			if hit {
				return Verdict{Refused: true, By: t}, true
			}
		}
	}
	return Verdict{}, false
}

// grants reports whether the licence offers usage, and returns its first
// <permits type="usage">, nil if none.
func (l *License) grants(usage string, opts Options) (bool, *Terms) {
	var permits *Terms
	granted, statesUsage := false, false
	for i := range l.Terms {
		t := &l.Terms[i]
		if t.Type != "usage" {
			continue
		}
		statesUsage = true
		if !t.Prohibits {
			if permits == nil {
				permits = t
			}
			granted = granted || Covers(t.Values, usage)
		}
	}
	switch {
	case permits != nil:
		return granted, permits
	case statesUsage: // prohibitions only, which prohibited() read
		return true, nil
	}
	return opts.GrantUnstated, nil
}

// unmet returns the first term of the licence the client does not meet,
// nil when it meets them all.
func (l *License) unmet(client Client) *Unmet {
	for i := range l.Terms {
		t := &l.Terms[i]
		if t.Prohibits || t.Type == "usage" {
			continue
		}
		u := &Unmet{Kind: t.Type, Element: t.String(), Line: t.Line, License: l}
		switch t.Type {
		case "user":
			if client.User != "" && slices.Contains(t.Values, client.User) {
				continue
			}
			u.Key = "rsl_user"
		case "geo":
			if client.Country != "" && inGeo(t.Values, client.Country) {
				continue
			}
			u.Key = "country"
		default:
			u.Kind = "element"
		}
		return u
	}
	if len(l.Unknown) > 0 {
		return &Unmet{Kind: "element", Element: "<" + l.Unknown[0] + ">", Line: l.Line, License: l}
	}
	for i := range l.Payments {
		if p := &l.Payments[i]; !p.met(client) {
			return &Unmet{Kind: "payment", Element: p.String(), Line: p.Line, Key: "accept_payment", License: l}
		}
	}
	for i := range l.Reports {
		r := &l.Reports[i]
		if !slices.Contains(client.Reporting, ReportingAll) && (r.Profile == "" || !slices.Contains(client.Reporting, r.Profile)) {
			return &Unmet{Kind: "reporting", Element: r.String(), Line: r.Line, Key: "accept_reporting", License: l}
		}
	}
	return nil
}

// Free reports whether the payment asks for nothing: type free, or no type
// and nothing in it (as a <payment> left out, which means free).
func (p *Payment) Free() bool {
	return p.Type == "free" ||
		p.Type == "" && len(p.Amounts)+len(p.Standard)+len(p.Custom)+len(p.Accepts) == 0
}

// met reports whether the client accepts the payment: it is free, or the
// client accepts its type (a type RSL 1.0 defines; any other, or none
// beside an amount or terms, only with PaymentAll).
func (p *Payment) met(client Client) bool {
	if p.Free() || slices.Contains(client.Payments, PaymentAll) {
		return true
	}
	return slices.Contains(PaymentTypes, p.Type) && slices.Contains(client.Payments, p.Type)
}

// String writes the payment back: `<payment type="crawl"> (0.015 USD)`.
func (p *Payment) String() string {
	s := fmt.Sprintf("<payment type=%s>", quote(p.Type))
	if p.Type == "" {
		s = "<payment>"
	}
	if d := p.details(); d != "" {
		s += " (" + d + ")"
	}
	return s
}

// details lists what the payment says beside its type: amounts, the URLs
// of its terms, the protocols it accepts.
func (p *Payment) details() string {
	var parts []string
	parts = append(parts, p.Amounts...)
	for _, u := range p.Standard {
		parts = append(parts, "standard "+u)
	}
	for _, u := range p.Custom {
		parts = append(parts, "custom "+u)
	}
	for _, a := range p.Accepts {
		parts = append(parts, "accepts "+a)
	}
	return clipText(strings.Join(parts, ", "))
}

// String writes the reporting obligation back: `<reporting
// type="telemetry" profile="https://…">`.
func (r *Reporting) String() string {
	return fmt.Sprintf("<reporting type=%s profile=%s>", quote(r.Type), quote(r.Profile))
}

// inGeo reports whether a geo list names country: itself, or EU for a
// member state.
func inGeo(list []string, country string) bool {
	for _, v := range list {
		if strings.EqualFold(v, country) || strings.EqualFold(v, "EU") && slices.Contains(euMembers, country) {
			return true
		}
	}
	return false
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

// Summary lists the terms of the content's licences, one line per
// licence, for the audit and the report: `license 1 (line 4): usage
// ai-input; user non-commercial; geo FR; payment crawl (0.015 USD);
// reporting telemetry https://…`, "not" before a prohibition. At most
// maxSummary licences, each cut to a few hundred bytes.
func (c *Content) Summary() []string {
	var out []string
	for i := range c.Licenses {
		if i == maxSummary {
			out = append(out, fmt.Sprintf("… %d more licences", len(c.Licenses)-i))
			break
		}
		l := &c.Licenses[i]
		var parts []string
		for _, t := range l.Terms {
			p := t.Type + " " + strings.Join(t.Values, " ")
			if t.Prohibits {
				p = "not " + p
			}
			parts = append(parts, p)
		}
		for _, p := range l.Payments {
			typ := p.Type
			if typ == "" {
				typ = "(no type)"
			}
			if d := p.details(); d != "" {
				typ += " (" + d + ")"
			}
			parts = append(parts, "payment "+typ)
		}
		for _, r := range l.Reports {
			parts = append(parts, "reporting "+r.Type+" "+r.Profile)
		}
		for _, u := range l.Unknown {
			parts = append(parts, "unknown element <"+u+">")
		}
		if len(parts) == 0 {
			parts = []string{"states no terms"}
		}
		out = append(out, clipText(fmt.Sprintf("license %d (line %d): %s", i+1, l.Line, strings.Join(parts, "; "))))
	}
	return out
}

// maxSummary bounds the licences Summary lists.
const maxSummary = 4
