package policy

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/htmlmeta"
	"github.com/robotsgate/robotsgate/robots"
	"github.com/robotsgate/robotsgate/robots/resolver"
	"github.com/robotsgate/robotsgate/tdmrep"
)

// ResponseJudge is what a decision fixes, when it is made, for judging the
// origin's response to the request (its AI-usage signals): the agent, the
// client's purposes, monitor mode and usage.scan_html. The relay and
// /explain and check judge responses with it alike, so that what they say is
// what the proxy does.
type ResponseJudge struct {
	agent string
	// purposes are the client's purposes a signal can refuse (see
	// Decision.ResponsePurposes); nil: nothing refuses.
	purposes []string
	// listFor are the client's purposes, which the listed signals name
	// among those they refuse.
	listFor  []string
	monitor  bool
	scanHTML bool
	// unknownAllow is usage.on_unknown: allow (a page whose head could not
	// be read is delivered, with a note).
	unknownAllow bool
	// licensing and request judge the RSL licences the response names
	// (JudgeLicenses); licensing is nil when licences are not read.
	licensing *licensing
	request   Request
	coldGate  resolver.ColdGate // the client's, for the licences' lookups
}

// ResponseJudge returns how the response to the request d allowed is to be
// judged.
func (d *Decision) ResponseJudge() ResponseJudge {
	return ResponseJudge{
		agent: d.Request.Agent(), purposes: d.ResponsePurposes(), listFor: d.Request.Client.Purposes,
		monitor: d.Request.Client.Mode == Monitor, scanHTML: d.ScanHTML, unknownAllow: d.unknownAllow,
		licensing: d.licensing, request: d.Request, coldGate: d.coldGate,
	}
}

// Refuses reports whether a response can be refused at all: the client has
// purposes and robots.txt was consulted. The relay judges only then, so
// that other clients pay nothing.
func (j ResponseJudge) Refuses() bool { return len(j.purposes) > 0 }

// ResponseJudgement is what an origin's response says of a request's
// purposes.
type ResponseJudgement struct {
	// Signals are every AI-usage signal found in the response's header
	// fields and, when its head was read, meta tags, with the purposes each
	// refuses.
	Signals []audit.UsageSignal
	// Refusal is the first signal that refuses one of the client's
	// purposes, when Refused.
	Refusal ResponseSignal
	Refused bool
	// Enforced reports whether the refusal withholds the response; a
	// monitored client's is only recorded, and the response delivered.
	Enforced bool
	// Licence is the RSL licence that refused (JudgeLicenses), nil for
	// any other refusal; licenceVerdict the decision it makes and
	// retryAfter its Retry-After (unknown licence). notes say what
	// configuration let through.
	Licence        *Licence
	licenceVerdict Verdict
	retryAfter     time.Duration
	notes          []string
	// coldLimited: a licence the response names is not cached and the
	// client's cold gate gave no place in time (FetchLimited).
	coldLimited bool
}

// Judge judges a response by its header fields h and, when usage.scan_html
// is on and the client has purposes, by its HTML head, read by head (nil:
// the response is not an HTML page with a body). The head is read when the
// header fields refuse nothing, or only by their tdm-reservation, which a
// meta tag supersedes (supersedeTDMHeader), and when a meta tag or an RSL
// <link> could refuse one of the client's purposes. A head that cannot be
// read leaves what the page says unknown: UsageUnknown, or with
// usage.on_unknown: allow a note (unscanned).
func (j ResponseJudge) Judge(h http.Header, head func() Head) ResponseJudgement {
	found := headerFindings(h, j.agent, j.listFor)
	out := j.outcome(found)
	metas := MetaConcerns(j.purposes)
	if !j.scanHTML || head == nil || !j.Refuses() || !metas && j.licensing == nil ||
		out.Refused && (out.Refusal.Source != "tdm-reservation" || out.Refusal.Meta) {
		return out
	}
	hd := head()
	switch {
	case hd.Unscanned != "" && out.Refused:
		return out
	case hd.Unscanned != "":
		return j.unscanned(found, hd.Unscanned)
	case !metas || len(hd.Metas) == 0:
		return out
	}
	found = append(found, metaFindings(hd.Metas, j.agent)...)
	supersedeTDMHeader(found)
	return j.outcome(found)
}

// JudgeResponse is the whole judgement of an origin's response, as the
// relay, /explain and check make it: its header fields and HTML head
// (Judge), then, when they refuse nothing, the RSL licences it names
// (JudgeLicenses), whose signals are listed after the others. head reads
// the head at most once for both (nil: not an HTML page with a body). The
// only error is ctx's (the client left while a licence was fetched).
func (j ResponseJudge) JudgeResponse(ctx context.Context, h http.Header, head func() Head) (ResponseJudgement, error) {
	out := j.Judge(h, head)
	if out.Refused {
		return out, nil
	}
	lic, err := j.JudgeLicenses(ctx, h, head)
	if err != nil {
		return out, err
	}
	lic.Signals = append(out.Signals, lic.Signals...)
	lic.notes = append(out.notes, lic.notes...)
	return lic, nil
}

// unscannedRetry is the Retry-After of a page whose head could not be
// read: asking again soon makes sense only if the origin answers
// otherwise.
const unscannedRetry = 5 * time.Minute

// unscanned is the judgement of a page whose head could not be read: the
// header findings, and an html-unscanned signal that refuses the client's
// purposes (UsageUnknown), or with usage.on_unknown: allow refuses nothing
// and leaves a note.
func (j ResponseJudge) unscanned(found []finding, why string) ResponseJudgement {
	out := ResponseJudgement{Enforced: !j.monitor, Signals: signalsOf(found)}
	sig := audit.UsageSignal{Signal: audit.SignalHTMLUnscanned, Value: quoteValue(why), Where: "the response's HTML head", Refuses: []string{}}
	refusal := ResponseSignal{Source: "HTML head", Value: quoteValue(why), Purpose: j.purposes[0], Unscanned: true}
	if j.unknownAllow {
		out.Signals = append(out.Signals, sig)
		out.notes = append(out.notes, refusal.Explain()+", allowed (usage.on_unknown: allow)")
		return out
	}
	sig.Refuses = slices.Clone(j.purposes)
	out.Signals = append(out.Signals, sig)
	out.Refusal, out.Refused = refusal, true
	return out
}

// outcome lists the findings and picks the first that refuses one of the
// client's purposes (the one of them listed first).
func (j ResponseJudge) outcome(found []finding) ResponseJudgement {
	out := ResponseJudgement{Enforced: !j.monitor}
	for _, f := range found {
		out.Signals = append(out.Signals, f.UsageSignal)
		if out.Refused {
			continue
		}
		for _, p := range j.purposes {
			if slices.Contains(f.Refuses, p) {
				out.Refusal, out.Refused = f.refusal(p), true
				break
			}
		}
	}
	return out
}

// ResponseRefusal is the signal of an origin's response that refused the
// request (Decision.Response), and the status the origin answered with.
type ResponseRefusal struct {
	Signal         ResponseSignal
	UpstreamStatus int
}

// ApplyResponse makes the judgement of the response part of the decision:
// a judgement that refuses turns the allowed request into UsageDenied (which
// a monitored client's Refused still reports false for), naming the signal
// in d.Response; an RSL licence's (JudgeLicenses) makes the decision it
// says (UsageDenied, LicenseRequired, UsageUnknown), naming the licence in
// d.Licence too. The relay, /explain and check apply it alike.
func (d *Decision) ApplyResponse(j ResponseJudgement, upstreamStatus int) {
	if d.Verdict != Allow {
		return
	}
	for _, n := range j.notes {
		d.addNote(n)
	}
	if !j.Refused {
		return
	}
	if j.coldLimited {
		d.Verdict, d.RetryAfter = FetchLimited, coldLimitRetry
		d.Note = "the response names an RSL licence that is not cached, and this client has too many lookups of uncached origins " +
			"and documents in flight (robots.cold_fetches_per_client): the response was withheld"
		return
	}
	d.Verdict, d.Response = UsageDenied, &ResponseRefusal{Signal: j.Refusal, UpstreamStatus: upstreamStatus}
	if j.Refusal.Unscanned {
		d.Verdict, d.RetryAfter = UsageUnknown, unscannedRetry
	}
	if j.Licence != nil {
		d.Verdict, d.Licence, d.RetryAfter = j.licenceVerdict, j.Licence, j.retryAfter
	}
}

// finding is one AI-usage signal of a response as it was found: what the
// audit lists, and how a refusal by it is named.
type finding struct {
	audit.UsageSignal
	source    string // the header field name or the meta tag's name
	meta      bool
	directive string // the refusing part of the value; for Content-Usage it depends on the purpose
	value     string // the value as sent
	// stmt is a Content-Usage or Content-Signal field's statement.
	stmt robots.Statement
}

// statementFinding lists a Content-Usage or Content-Signal header field:
// the purposes its preferences refuse; one that is not a dictionary says
// so (a Content-Usage one then refuses nothing, a Content-Signal one what
// it names with "no").
func statementFinding(s robots.Statement, kind, field string, purposes []string, contentSignal bool) finding {
	where := "response header " + field
	if s.Err != nil || len(s.Prefs) == 0 {
		where += statementNote(&s, contentSignal)
	}
	return finding{UsageSignal: audit.UsageSignal{Signal: kind, Value: quoteValue(s.Text), Where: where,
		Refuses: stmtRefuses(&s, purposes, contentSignal)}, source: field, value: s.Text, stmt: s}
}

// refusal names the finding as the signal that refuses purpose.
func (f finding) refusal(purpose string) ResponseSignal {
	directive := f.directive
	switch f.Signal {
	case audit.SignalHeaderContentUsage:
		pref, _ := refusing(f.stmt.Prefs, usageLabels(purpose), "n")
		directive = pref.Name + "=" + pref.Value
	case audit.SignalHeaderContentSignal:
		pref, _ := refusing(f.stmt.Prefs, signalKeys(purpose), "no")
		directive = pref.Name + "=" + pref.Value
	}
	return ResponseSignal{Source: f.source, Meta: f.meta, Value: f.Value, Directive: directive, Purpose: purpose, Policy: f.Policy}
}

// headerFindings are the AI-usage signals among a response's header fields,
// in the order a refusal is looked for: tdm-reservation (tdmHeaderFinding),
// the Content-Usage field, the Content-Signal field (each field's lines
// one RFC 9651 Dictionary, as RFC 9651 §4.2 joins them: one statement),
// every X-Robots-Tag line naming noai, noml or noimageai (whichever agent
// it is scoped to), then the Robots-Tag field (robotsTagFinding).
func headerFindings(h http.Header, agent string, purposes []string) []finding {
	var out []finding
	if f, ok := tdmHeaderFinding(h); ok {
		out = append(out, f)
	}
	if lines := h.Values("Content-Usage"); len(lines) > 0 {
		out = append(out, statementFinding(robots.ParseContentUsage(lines, 0), audit.SignalHeaderContentUsage, "Content-Usage", purposes, false))
	}
	if lines := h.Values("Content-Signal"); len(lines) > 0 {
		out = append(out, statementFinding(robots.ParseContentSignal(lines, 0), audit.SignalHeaderContentSignal, "Content-Signal", purposes, true))
	}
	image := isImage(h.Get("Content-Type"))
	for _, v := range h.Values("X-Robots-Tag") {
		if !mentionsNoAI(v) {
			continue
		}
		f := finding{UsageSignal: audit.UsageSignal{Signal: audit.SignalXRobotsTag, Value: quoteValue(v),
			Where: "response header X-Robots-Tag", Refuses: []string{}}, source: "X-Robots-Tag", value: v}
		if d, ok := robotsTagRefusal(v, agent, image); ok {
			f.Refuses, f.directive = trainingRefuses(), d
		}
		out = append(out, f)
	}
	if f, ok := robotsTagFinding(h.Values("Robots-Tag"), agent, image); ok {
		out = append(out, f)
	}
	return out
}

// robotsTagFinding reads the Robots-Tag field (its lines are one
// structured-field List, robots.ParseRobotsTag): a signal when a member,
// for whichever agent, names noai, noml or noimageai, refusing the
// training purposes when "*" or a member naming the agent does (noimageai
// for an image only). A field that does not parse is a signal whatever it
// says, since what it says is unknown; it refuses the training purposes
// when noai, noml (or, for an image, noimageai) appears in it as a word,
// whoever it seems to be for: a rule a site wrote is not ignored for a
// syntax error, but no rule is made up either.
func robotsTagFinding(lines []string, agent string, image bool) (finding, bool) {
	if len(lines) == 0 {
		return finding{}, false
	}
	value := strings.Join(lines, ", ")
	f := finding{UsageSignal: audit.UsageSignal{Signal: audit.SignalRobotsTag, Value: quoteValue(value),
		Where: "response header Robots-Tag", Refuses: []string{}}, source: "Robots-Tag", value: value}
	items, err := robots.ParseRobotsTag(lines)
	if err != nil {
		f.Where += " (not a structured-field list)"
		if d, ok := trainingRule(strings.FieldsFunc(value, func(r rune) bool { return strings.ContainsRune(",;:= \t\"", r) }), image); ok {
			f.Refuses, f.directive = trainingRefuses(), d
		}
		return f, true
	}
	mentions := false
	for _, it := range items {
		if _, ok := trainingRule(it.Rules, true); ok {
			mentions = true
		}
	}
	if !mentions {
		return finding{}, false
	}
	if d, ok := trainingRule(robots.RobotsTagRules(items, agent), image); ok {
		f.Refuses, f.directive = trainingRefuses(), d
	}
	return f, true
}

// trainingRule returns the first of rules (robots directives, compared
// ignoring ASCII case) that refuses the training purposes: noai, noml, or
// for an image noimageai.
func trainingRule(rules []string, image bool) (string, bool) {
	for _, r := range rules {
		switch {
		case strings.EqualFold(r, "noai"):
			return "noai", true
		case strings.EqualFold(r, "noml"):
			return "noml", true
		case image && strings.EqualFold(r, "noimageai"):
			return "noimageai", true
		}
	}
	return "", false
}

// metaFindings are the AI-usage signals among an HTML head's meta tags, for
// a request judged as agent, in document order: <meta
// name="tdm-reservation"> (with the tdm-policy tag's URL), and the tags
// named robots or for the agent (matched as robots.txt matches user-agent
// lines) that name noai, noml or noimageai. noimageai never refuses a page,
// whose images are fetched, and judged, separately.
func metaFindings(metas []htmlmeta.Meta, agent string) []finding {
	var out []finding
	for _, m := range metas {
		where := `<meta name="` + quoteValue(m.Name) + `">`
		switch {
		case m.Name == "tdm-reservation":
			f := finding{UsageSignal: audit.UsageSignal{Signal: audit.SignalMetaTDMReservation, Value: quoteValue(m.Content),
				Where: where, Refuses: []string{}}, source: m.Name, meta: true, directive: "1", value: m.Content}
			if tdmValue(m.Content) == tdmrep.Reserved {
				f.Refuses, f.Policy = trainingRefuses(), quoteValue(metaPolicy(metas))
			}
			out = append(out, f)
		case (m.Name == "robots" || robots.NamesAgent(agent, m.Name)) && mentionsNoAI(m.Content):
			f := finding{UsageSignal: audit.UsageSignal{Signal: audit.SignalMetaRobots, Value: quoteValue(m.Content),
				Where: where, Refuses: []string{}}, source: m.Name, meta: true, value: m.Content}
			if d, ok := trainingRule(directives(m.Content), false); ok {
				f.Refuses, f.directive = trainingRefuses(), d
			}
			out = append(out, f)
		}
	}
	return out
}

// signalsOf lists what was found.
func signalsOf(found []finding) []audit.UsageSignal {
	var out []audit.UsageSignal
	for _, f := range found {
		out = append(out, f.UsageSignal)
	}
	return out
}
