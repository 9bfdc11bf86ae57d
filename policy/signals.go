package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/robots"
	"github.com/robotsgate/robotsgate/tdmrep"
)

// KnownPurposes are the purposes robotsgate knows the vocabulary of: an
// audit.UsageSignal says which of them (and of the client's own) it refuses.
var KnownPurposes = []string{"train-ai", "train-genai", "ai-train", "tdm", "search", "ai-input", "ai-use"}

// UsageSignals lists the AI-usage signals of the decision's robots.txt
// (the Content-Usage lines of the group for the target, the file's
// Content-Signal lines) and tdmrep.json (the entry that applies to the
// target, when the file was consulted), for a client with purposes (nil
// otherwise: the audit of other clients costs nothing).
func (d *Decision) UsageSignals() []audit.UsageSignal {
	purposes := d.Request.Client.Purposes
	if len(purposes) == 0 {
		return nil
	}
	return d.usageSignals(purposes)
}

// ExplainSignals is UsageSignals for /explain and check, whatever the
// client's purposes: every signal, with the purposes each refuses.
func (d *Decision) ExplainSignals() []audit.UsageSignal {
	return d.usageSignals(d.Request.Client.Purposes)
}

func (d *Decision) usageSignals(purposes []string) []audit.UsageSignal {
	var out []audit.UsageSignal
	if d.Robots != nil && d.Robots.File != nil {
		for _, s := range d.Rule.Group.ContentUsage(d.Request.Target) {
			out = appendStatement(out, audit.SignalRobotsContentUsage, &s, purposes, false)
		}
		for _, s := range d.Robots.File.ContentSignals() {
			out = appendStatement(out, audit.SignalRobotsContentSignal, &s, purposes, true)
		}
	}
	if e := d.TDM.Entry; e != nil {
		s := audit.UsageSignal{Signal: audit.SignalTDMRep, Value: "tdm-reservation " + e.Reservation.String(), Where: e.String(),
			Policy: e.Policy, Refuses: []string{}}
		if e.Reservation == tdmrep.Reserved {
			s.Refuses = trainingRefuses()
		}
		out = append(out, s)
	}
	for _, l := range d.Licences {
		out = append(out, l.signal(purposes))
	}
	return out
}

func prefSignal(kind string, p robots.Pref, refuses []string) audit.UsageSignal {
	return audit.UsageSignal{Signal: kind, Value: p.Name + "=" + p.Value, Where: fmt.Sprintf("robots.txt line %d", p.Line), Refuses: refuses}
}

// appendStatement lists a robots.txt statement: each preference it states
// ("train-ai=n", line N), or, for one that states none or is not a
// dictionary, the statement itself, saying so.
func appendStatement(out []audit.UsageSignal, kind string, s *robots.Statement, purposes []string, contentSignal bool) []audit.UsageSignal {
	if s.Err == nil && len(s.Prefs) > 0 {
		for _, p := range s.Prefs {
			out = append(out, prefSignal(kind, p, prefRefuses(p, purposes, contentSignal)))
		}
		return out
	}
	return append(out, audit.UsageSignal{Signal: kind, Value: quoteValue(s.Text),
		Where: fmt.Sprintf("robots.txt line %d%s", s.Line, statementNote(s, contentSignal)), Refuses: stmtRefuses(s, purposes, contentSignal)})
}

// statementNote says, after where a statement was read, that it states no
// preference, or is not a dictionary and how it was read then.
func statementNote(s *robots.Statement, contentSignal bool) string {
	switch {
	case s.Err != nil && contentSignal:
		return ` (not an RFC 9651 dictionary: read for its "no"s)`
	case s.Err != nil:
		return " (not an RFC 9651 dictionary: no preference)"
	case len(s.Prefs) == 0:
		return " (states no preference)"
	}
	return ""
}

// stmtRefuses lists the purposes any preference of a statement refuses.
func stmtRefuses(s *robots.Statement, purposes []string, contentSignal bool) []string {
	refuses := []string{}
	for _, p := range s.Prefs {
		for _, r := range prefRefuses(p, purposes, contentSignal) {
			if !slices.Contains(refuses, r) {
				refuses = append(refuses, r)
			}
		}
	}
	return refuses
}

// candidates are the purposes a signal is checked against: KnownPurposes,
// then the client's others.
func candidates(purposes []string) []string {
	out := KnownPurposes
	for _, p := range purposes {
		if !slices.Contains(out, p) {
			if len(out) == len(KnownPurposes) {
				out = slices.Clone(KnownPurposes)
			}
			out = append(out, p)
		}
	}
	return out
}

// prefRefuses lists the purposes a robots.txt or header preference
// refuses: a Content-Usage one ("n"), or with contentSignal a
// Content-Signal one ("no"), in the vocabulary usageRefusal judges by.
func prefRefuses(p robots.Pref, purposes []string, contentSignal bool) []string {
	refuses := []string{}
	for _, c := range candidates(purposes) {
		list, no := usageLabels(c), "n"
		if contentSignal {
			list, no = signalKeys(c), "no"
		}
		if _, ok := refusing([]robots.Pref{p}, list, no); ok {
			refuses = append(refuses, c)
		}
	}
	return refuses
}

// trainingRefuses lists the purposes a TDM reservation, noai or noimageai
// refuses: trainingPurposes, and none other of the client's.
func trainingRefuses() []string { return slices.Clone(trainingPurposes) }

// mentionsNoAI reports whether a robots directive list names noai, noml
// or noimageai.
func mentionsNoAI(v string) bool {
	_, ok := trainingRule(directives(strings.ReplaceAll(v, ":", " ")), true)
	return ok
}

// quoteValue cuts a value the origin sent to maxSignalValue bytes.
func quoteValue(v string) string {
	v = strings.TrimSpace(v)
	if len(v) > maxSignalValue {
		v = strings.ToValidUTF8(v[:maxSignalValue], "") + "…"
	}
	return v
}

// Kind is the ResponseSignal's kind (audit.SignalHeaderTDMReservation...).
func (s ResponseSignal) Kind() string {
	switch {
	case s.Unscanned:
		return audit.SignalHTMLUnscanned
	case s.Licence != nil && s.Licence.Unknown:
		return audit.SignalRSLUnknown
	case s.Licence != nil:
		return audit.SignalRSL
	case s.Meta && s.Source == "tdm-reservation":
		return audit.SignalMetaTDMReservation
	case s.Meta:
		return audit.SignalMetaRobots
	case s.Source == "tdm-reservation":
		return audit.SignalHeaderTDMReservation
	case s.Source == "Content-Usage":
		return audit.SignalHeaderContentUsage
	case s.Source == "Content-Signal":
		return audit.SignalHeaderContentSignal
	case s.Source == "Robots-Tag":
		return audit.SignalRobotsTag
	default:
		return audit.SignalXRobotsTag
	}
}

// RefusedBy names the kind of signal that refused the request
// (audit.SignalTDMRep...) for a UsageDenied, UsageUnknown or
// LicenseRequired decision, made before the request was forwarded or on
// its response; "" for any other decision.
func (d *Decision) RefusedBy() string {
	switch {
	case d.Licence != nil && d.Licence.Unknown:
		return audit.SignalRSLUnknown
	case d.Licence != nil:
		return audit.SignalRSL
	case d.Verdict == UsageUnknown && d.Response != nil:
		return d.Response.Signal.Kind()
	case d.Verdict == UsageUnknown:
		return audit.SignalTDMRepUnknown
	case d.Verdict != UsageDenied:
		return ""
	case d.Response != nil:
		return d.Response.Signal.Kind()
	case d.TDM.Reserved():
		return audit.SignalTDMRep
	case d.PrefSignal:
		return audit.SignalRobotsContentSignal
	default:
		return audit.SignalRobotsContentUsage
	}
}

// ParsePurposes reads a comma-separated list of purposes
// ("train-ai, search"), as /explain and check take it; empty items are
// dropped.
func ParsePurposes(list string) []string {
	var out []string
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
