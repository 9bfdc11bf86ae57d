package policy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/doccache"
	"github.com/robotsgate/robotsgate/robots/resolver"
	"github.com/robotsgate/robotsgate/rsl"
)

// RSL licences (Really Simple Licensing 1.0, package rsl), read for every
// client with purposes and no other. A site names them with robots.txt
// License lines (judged before the request, after robots.txt and TDMRep
// allowed it), with Link response header fields and, when usage.scan_html
// is on, with <link rel="license"> tags in an HTML head (both judged on
// the response, through ResponseJudge.JudgeLicenses and ApplyResponse, as
// the other response signals are). Each document is fetched once per URL
// (doccache.RSLCache). For each of the client's purposes, as the RSL usage it is
// (rslUsage), the <content> that applies to the target says
// (rsl.Content.Judge, with what the client declares, Client.Licence):
//
//   - prohibited (a <prohibits> of any licence lists the usage, the
//     client's user type or country), or permitted by no licence: 403
//     usage-denied, naming the licence URL and the element that refused;
//     likewise a user or geo term of every licence that grants it that
//     the client does not meet;
//   - granted only on a payment or reporting term the client has not
//     accepted (clients[].accept_payment, accept_reporting): 403
//     license-required, naming the term; a request with a licence token of
//     its own (Authorization: License …) is forwarded past a payment term,
//     for the origin to check the token;
//   - granted, but the <content> names a licence server: 403
//     license-required, naming the server (usage.on_license_server:
//     refuse), since a client must present a token robotsgate does not
//     obtain; a request that carries a token of its own is forwarded;
//   - granted, or no <content> applies: nothing.
//
// A document that cannot be read (any answer but a 2xx with a valid RSL
// document; one named by robots.txt with a <content url="">, which names
// the linking page and robots.txt links none) leaves the licence unknown:
// 503 usage-unknown unless usage.on_unknown is allow. The document itself
// may always be fetched.

// rslUsages maps a purpose to the RSL usage it is; a purpose not listed
// is the usage of its own name (which only "all" covers, or a site that
// names it). docs/decisions.md has the table.
var rslUsages = map[string]string{
	"train-ai":    rsl.UsageAITrain,
	"train-genai": rsl.UsageAITrain,
	"ai-train":    rsl.UsageAITrain,
	"tdm":         rsl.UsageAITrain,
	"ai-input":    rsl.UsageAIInput,
	"ai-use":      rsl.UsageAIInput,
	"search":      rsl.UsageSearch,
}

// rslUsage is the RSL usage that stands for purpose.
func rslUsage(purpose string) string {
	if u, ok := rslUsages[purpose]; ok {
		return u
	}
	return purpose
}

// licensing is what judging RSL licences needs, fixed by the Engine's
// configuration.
type licensing struct {
	cache     *doccache.RSLCache
	onUnknown config.UsageOnUnknown
	onServer  config.UsageOnUnknown
	opts      rsl.Options
	now       func() time.Time
}

// Licence is an RSL licence a site named for a request, and what it said.
type Licence struct {
	// Source says where the site named it: "robots.txt line 3",
	// "response header Link", `<link rel="license">`.
	Source string
	// URL is the document's absolute URL.
	URL string
	// Result is the document as fetched (doccache); Match the <content>
	// that applies to the target.
	Result *doccache.RSLResult
	Match  rsl.Match
	// Purpose is the client's purpose it refused (or needs a licence
	// server or a term for), Verdict what the <content> said of it; ""
	// when it refused nothing. Unknown: the document could not be read,
	// or (invalid says why) cannot be judged where the site named it.
	Purpose string
	Verdict rsl.Verdict
	Unknown bool
	invalid string
	// client and opts are what it was judged with.
	client rsl.Client
	opts   rsl.Options
}

// SHA256 is the archived body of the document, "" when none.
func (l *Licence) SHA256() string {
	if l.Result == nil {
		return ""
	}
	return l.Result.SHA256
}

// Cause says why an Unknown licence could not be read.
func (l *Licence) Cause() string {
	if l.invalid != "" {
		return l.invalid
	}
	return l.Result.Cause()
}

// Element names the element that refused: `<prohibits type="usage">ai-train</prohibits>`
// (line 5) in `<content url="/*">` (line 3); the unmet term; for a licence
// server, the <content> with its server; "" otherwise.
func (l *Licence) Element() string {
	c := l.Match.Content
	switch {
	case l.Match.TooCostly:
		return fmt.Sprintf("(the <content> patterns would need more than %d octets of comparisons)", rsl.MaxMatchWork)
	case c == nil:
		return ""
	case l.Verdict.Unmet != nil:
		return fmt.Sprintf("%s in %s", l.Verdict.Unmet, c)
	case l.Verdict.By != nil:
		return fmt.Sprintf("%s (line %d) in %s", l.Verdict.By, l.Verdict.By.Line, c)
	case l.Verdict.Server != "":
		return fmt.Sprintf("%s server=%q", c, l.Verdict.Server)
	}
	return c.String()
}

// Explain is a sentence (without a final period) saying what the licence
// did to the request.
func (l *Licence) Explain() string {
	head := fmt.Sprintf("RSL licence %s (%s)", l.URL, l.Source)
	usage := fmt.Sprintf("the purpose %s (RSL usage %s)", l.Purpose, rslUsage(l.Purpose))
	v := &l.Verdict
	switch {
	case l.Unknown:
		return fmt.Sprintf("%s could not be read (%s): the site's licence terms are unknown", head, l.Cause())
	case l.Match.TooCostly:
		return fmt.Sprintf("%s: %s, counted as prohibiting the purpose %s", head, l.Element(), l.Purpose)
	case v.Unmet != nil:
		return fmt.Sprintf("%s: %s grants %s only on a term this client does not meet: %s%s",
			head, l.Match.Content, usage, l.Element(), unmetHint(v.Unmet, l.client))
	case v.NotPermitted && v.By == nil:
		return fmt.Sprintf("%s: no <license> of %s states a usage, and a licence that states none grants nothing (usage.rsl_unstated_usage: refuse): %s is not licensed",
			head, l.Match.Content, usage)
	case v.NotPermitted:
		return fmt.Sprintf("%s: %s does not permit %s", head, l.Element(), usage)
	case v.Refused && v.By.Type == "user" || v.Refused && v.By.Type == "geo":
		return fmt.Sprintf("%s: %s prohibits %s to %s", head, l.Element(), usage, declared(v.By.Type, l.client))
	case v.Refused && v.By.Type != "usage":
		return fmt.Sprintf("%s: %s, a prohibition robotsgate cannot judge, is counted as prohibiting %s", head, l.Element(), usage)
	case v.Refused:
		return fmt.Sprintf("%s: %s prohibits %s", head, l.Element(), usage)
	case v.Server != "":
		return fmt.Sprintf("%s: %s grants the purpose %s only with a licence token from the licence server %s (Authorization: License), which this proxy does not obtain",
			head, l.Match.Content, l.Purpose, v.Server)
	}
	return head + " refuses nothing"
}

// declared names the client by what it declares for a user or geo term:
// "this client (rsl_user: commercial)", or that it declares nothing.
func declared(kind string, c rsl.Client) string {
	switch {
	case kind == "user" && c.User != "":
		return "this client (clients[].rsl_user: " + c.User + ")"
	case kind == "user":
		return "a client that declares no user type (clients[].rsl_user), which cannot show it is not one of them"
	case c.Country != "":
		return "this client (clients[].country: " + c.Country + ")"
	}
	return "a client that declares no country (clients[].country), which cannot show it is elsewhere"
}

// unmetHint says which configuration would meet an unmet term.
func unmetHint(u *rsl.Unmet, c rsl.Client) string {
	switch u.Kind {
	case "user":
		return " (" + declared("user", c) + ")"
	case "geo":
		return " (" + declared("geo", c) + ")"
	case "payment":
		return " (its payment is not among clients[].accept_payment)"
	case "reporting":
		return " (its profile is not among clients[].accept_reporting)"
	}
	return " (an element robotsgate does not know)"
}

// termVerdict is the decision a refusal by an unmet term makes: a payment
// or reporting obligation asks the client to take up the licence
// (LicenseRequired); the others say it is not licensed (UsageDenied).
func termVerdict(v rsl.Verdict) Verdict {
	if u := v.Unmet; u != nil && (u.Kind == "payment" || u.Kind == "reporting") {
		return LicenseRequired
	}
	return UsageDenied
}

// signal lists the licence as an audit signal, with the purposes it
// refuses among the known and the client's, and the terms of its
// <content>'s licences.
func (l *Licence) signal(purposes []string) audit.UsageSignal {
	s := audit.UsageSignal{Signal: audit.SignalRSL, Where: l.Source, License: l.URL, SHA256: l.SHA256(), Refuses: []string{}}
	c := l.Match.Content
	switch {
	case l.Unknown:
		s.Signal, s.Value = audit.SignalRSLUnknown, quoteValue(l.Cause())
		return s
	case l.Match.TooCostly:
		s.Value, s.Refuses = "(too costly to match)", candidates(purposes)
		return s
	case c == nil:
		s.Value = "no <content> applies"
		return s
	}
	s.Value, s.Server, s.Terms = quoteValue(c.String()), c.Server, c.Summary()
	for _, p := range candidates(purposes) {
		switch v := c.Judge(rslUsage(p), l.client, l.opts); {
		case v.Refused:
			s.Refuses = append(s.Refuses, p)
		case v.Server != "":
			s.LicenseFor = append(s.LicenseFor, p)
		}
	}
	return s
}

// licenceRef is a licence a site named: where, and its URL as written;
// linked when a response named it (a Link header, a <link> tag), whose
// <content url=""> is then the response's resource.
type licenceRef struct {
	source, ref string
	linked      bool
}

// licenceOutcome is what the licences a site named say of a request.
type licenceOutcome struct {
	// found are the licences consulted, in order.
	found []*Licence
	// refusal is the licence that refuses the request, nil if none does;
	// verdict the decision it makes (UsageDenied, LicenseRequired,
	// UsageUnknown), retryAfter when asking again makes sense (unknown).
	refusal    *Licence
	verdict    Verdict
	retryAfter time.Duration
	// notes say what was let through by configuration.
	notes []string
}

// judge reads the licences refs name for a request to base (the
// target's absolute URL) by a client with purposes. The only errors are
// ctx's (resolver.ErrColdLimit when the cold gate gave no place).
func (l *licensing) judge(ctx context.Context, base *url.URL, req *Request, purposes []string, refs []licenceRef) (licenceOutcome, error) {
	var out licenceOutcome
	seen := map[string]bool{}
	for _, r := range refs {
		u, ok := resolveLicence(base, r.ref)
		if !ok || seen[u] || u == base.String() || len(seen) >= rsl.MaxLicenses {
			continue // not http(s), named twice, the document itself, or beyond the bound
		}
		seen[u] = true
		res, err := l.cache.Lookup(ctx, u)
		if err != nil {
			return out, err
		}
		lic := &Licence{Source: r.source, URL: u, Result: res, client: req.Client.Licence, opts: l.opts}
		out.found = append(out.found, lic)
		if !res.Unknown() && !r.linked {
			if c := res.Doc.HasEmptyURL(); c != nil {
				lic.invalid = fmt.Sprintf("%s names the page that links the document, and robots.txt links none", c)
			}
		}
		if res.Unknown() || lic.invalid != "" {
			lic.Unknown = true
			if out.refusal != nil {
				continue
			}
			if l.onUnknown == config.UsageUnknownAllow {
				out.notes = append(out.notes, lic.Explain()+", allowed (usage.on_unknown: allow)")
				continue
			}
			lic.Purpose = purposes[0]
			out.refusal, out.verdict = lic, UsageUnknown
			out.retryAfter = ceilSeconds(res.Expires.Sub(l.now()))
			continue
		}
		lic.Match = res.Doc.Match(req.Origin, req.Target, r.linked)
		if out.refusal != nil && out.verdict != LicenseRequired {
			continue
		}
		l.judgeLicence(lic, purposes, req.LicenseToken, &out)
	}
	return out, nil
}

// judgeLicence applies one readable licence to the purposes: a
// prohibition or an unmet user or geo term refuses (and replaces a
// license-required refusal found before); an unmet payment or reporting
// term, or a licence server, refuses with LicenseRequired (a payment term
// and a licence server not when the request carries a licence token of its
// own; a licence server not when usage.on_license_server says so).
func (l *licensing) judgeLicence(lic *Licence, purposes []string, token bool, out *licenceOutcome) {
	if lic.Match.TooCostly {
		lic.Purpose = purposes[0]
		out.refusal, out.verdict = lic, UsageDenied
		return
	}
	c := lic.Match.Content
	if c == nil {
		return
	}
	var required *Licence // the first purpose granted only on a payment or reporting term
	for _, p := range purposes {
		v := c.Judge(rslUsage(p), lic.client, lic.opts)
		if !v.Refused {
			continue
		}
		if termVerdict(v) == UsageDenied {
			lic.Purpose, lic.Verdict = p, v
			out.refusal, out.verdict = lic, UsageDenied
			return
		}
		if required == nil && !(token && v.Unmet.Kind == "payment") {
			required = &Licence{}
			*required = *lic
			required.Purpose, required.Verdict = p, v
		} else if token && v.Unmet.Kind == "payment" {
			cp := *lic
			cp.Purpose, cp.Verdict = p, v
			out.notes = append(out.notes, cp.Explain()+"; the request carries a licence token of its own (Authorization: License), for the origin to check")
		}
	}
	if required != nil {
		if out.refusal == nil {
			*lic = *required
			out.refusal, out.verdict = lic, LicenseRequired
		}
		return
	}
	if c.Server == "" || out.refusal != nil {
		return
	}
	lic.Purpose, lic.Verdict = purposes[0], c.Judge(rslUsage(purposes[0]), lic.client, lic.opts)
	switch {
	case token:
		out.notes = append(out.notes, lic.Explain()+"; the request carries a licence token of its own (Authorization: License), for the origin to check")
		return
	case l.onServer == config.UsageUnknownAllow:
		out.notes = append(out.notes, lic.Explain()+", allowed (usage.on_license_server: allow)")
		return
	}
	out.refusal, out.verdict = lic, LicenseRequired
}

// HasLicenseToken reports whether Authorization field values carry an
// RSL licence token: the scheme License (ignoring case) and a token.
func HasLicenseToken(values []string) bool {
	for _, v := range values {
		scheme, token, ok := strings.Cut(strings.TrimSpace(v), " ")
		if ok && strings.EqualFold(scheme, "License") && strings.TrimSpace(token) != "" {
			return true
		}
	}
	return false
}

// resolveLicence resolves a licence reference against the URL it was
// found for: an absolute http(s) URL without its fragment, or false.
func resolveLicence(base *url.URL, ref string) (string, bool) {
	r, err := url.Parse(ref)
	if err != nil {
		return "", false
	}
	u := base.ResolveReference(r)
	u.Fragment, u.RawFragment = "", ""
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	return u.String(), true
}

// apply makes the outcome part of a decision made before the request.
func (o *licenceOutcome) apply(d *Decision) {
	d.Licences = append(d.Licences, o.found...)
	for _, n := range o.notes {
		d.addNote(n)
	}
	if o.refusal == nil {
		return
	}
	d.Verdict, d.Licence, d.RetryAfter = o.verdict, o.refusal, o.retryAfter
	d.Note = o.refusal.Explain()
}

// addNote adds a sentence to the decision's note.
func (d *Decision) addNote(n string) {
	if d.Note != "" {
		d.Note += "; "
	}
	d.Note += n
}

// judgeRSL applies the robots.txt License lines to an allowed request of
// a client with purposes. The only error is ctx's.
func (e *Engine) judgeRSL(ctx context.Context, d *Decision) error {
	lic := e.licensing
	purposes := d.Request.Client.Purposes
	if lic == nil || len(purposes) == 0 || d.Robots == nil || d.Robots.File == nil {
		return nil
	}
	lines := d.Robots.File.Licenses()
	if len(lines) == 0 {
		return nil
	}
	refs := make([]licenceRef, len(lines))
	for i, l := range lines {
		refs[i] = licenceRef{source: fmt.Sprintf("robots.txt line %d", l.Line), ref: l.URL}
	}
	base, err := url.Parse(d.Request.Origin.URL(d.Request.Target))
	if err != nil {
		return nil // a target the proxy accepted always parses
	}
	out, err := lic.judge(ctx, base, &d.Request, purposes, refs)
	if err != nil {
		return coldLimited(d, err)
	}
	out.apply(d)
	return nil
}

// JudgeLicenses judges the RSL licences an origin's response names, for
// a request the decision allowed: its Link header fields (rel="license",
// type application/rsl+xml) and, when usage.scan_html is on and head is
// not nil, the <link rel="license" type="application/rsl+xml"> tags of its
// HTML head, read by head. References are resolved against the request's
// URL. The judgement lists each licence consulted and, when one refuses,
// names it (Licence) with the decision it makes, for ApplyResponse. For a
// request that nothing can refuse (no purposes: /explain and check
// listing a response's signals) the licences are listed as judged for the
// known purposes, and refuse nothing. The only error is ctx's.
func (j ResponseJudge) JudgeLicenses(ctx context.Context, h http.Header, head func() Head) (ResponseJudgement, error) {
	out := ResponseJudgement{Enforced: !j.monitor}
	if j.licensing == nil {
		return out, nil
	}
	purposes := j.purposes
	if len(purposes) == 0 {
		purposes = KnownPurposes
	}
	var refs []licenceRef
	for _, r := range rsl.LinkLicenses(h.Values("Link")) {
		refs = append(refs, licenceRef{source: "response header Link", ref: r, linked: true})
	}
	if j.scanHTML && head != nil && len(refs) < rsl.MaxLicenses {
		for _, l := range head().Links { // an unscanned head: Judge made it UsageUnknown
			if rsl.IsLicenseLink(l.Rel, l.Type) {
				refs = append(refs, licenceRef{source: `<link rel="license">`, ref: l.Href, linked: true})
			}
		}
	}
	if len(refs) == 0 {
		return out, nil
	}
	base, err := url.Parse(j.request.Origin.URL(j.request.Target))
	if err != nil {
		return out, nil
	}
	if j.coldGate != nil {
		ctx = resolver.WithColdGate(ctx, j.coldGate)
	}
	o, err := j.licensing.judge(ctx, base, &j.request, purposes, refs)
	if errors.Is(err, resolver.ErrColdLimit) {
		out.Refused, out.coldLimited = len(j.purposes) > 0, len(j.purposes) > 0
		return out, nil
	}
	if err != nil {
		return out, err
	}
	for _, l := range o.found {
		out.Signals = append(out.Signals, l.signal(j.listFor))
	}
	if len(j.purposes) == 0 {
		return out, nil // listed, never refusing
	}
	out.notes = o.notes
	if o.refusal != nil {
		out.Refused, out.Licence, out.licenceVerdict, out.retryAfter = true, o.refusal, o.verdict, o.retryAfter
		out.Refusal = ResponseSignal{Source: o.refusal.Source, Value: o.refusal.URL, Purpose: o.refusal.Purpose, Licence: o.refusal}
	}
	return out, nil
}

// ConsultLicenses reads the robots.txt License lines for a decision that
// did not (a client without purposes, a request refused before), for
// /explain and check: the licences are listed (Licences), judged for the
// client's purposes or, without any, every known purpose; the verdict is
// left as it is. The only error is ctx's.
func (e *Engine) ConsultLicenses(ctx context.Context, d *Decision) error {
	if e.licensing == nil || len(d.Licences) > 0 || d.Robots == nil || d.Robots.File == nil {
		return nil
	}
	c := *d
	if len(c.Request.Client.Purposes) == 0 {
		c.Request.Client.Purposes = KnownPurposes
	}
	c.Verdict, c.Note, c.Licence = Allow, "", nil
	if err := e.judgeRSL(ctx, &c); err != nil {
		return err
	}
	d.Licences = c.Licences
	return nil
}
