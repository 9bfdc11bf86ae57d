package policy

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/tdmrep"
)

// The site-wide TDM reservations of the W3C TDM Reservation Protocol: an
// origin's /.well-known/tdmrep.json, read for the clients that have one
// of the purposes a TDM reservation concerns (trainingPurposes: train-ai,
// train-genai, ai-train, tdm) and for no other, after robots.txt has
// allowed the request. The first entry whose location matches the target
// applies: tdm-reservation 1 refuses the request (UsageDenied, naming the
// entry and its tdm-policy). A file that cannot be fetched (429, 5xx,
// network) leaves the reservations unknown: UsageUnknown (503) unless
// usage.on_unknown is allow. The file itself may always be fetched.

// judgeTDM applies the origin's tdmrep.json to an allowed request of a
// client with a TDM purpose. The only error is ctx's.
func (e *Engine) judgeTDM(ctx context.Context, d *Decision) error {
	if e.cfg.TDMRep == nil {
		return nil
	}
	purpose, ok := firstOf(d.Request.Client.Purposes, trainingPurposes) // none: at once
	if !ok || isTDMRepFile(d.Request.Target) {
		return nil
	}
	res, err := e.cfg.TDMRep.Lookup(ctx, d.Request.Origin)
	if err != nil {
		return coldLimited(d, err)
	}
	d.TDMRep = res
	if res.Unknown() {
		note := fmt.Sprintf("tdmrep.json could not be fetched (%s): the site's TDM reservations are unknown", causeOrStatus(res.Cause()))
		if e.cfg.TDMUnknown == config.UsageUnknownAllow {
			d.Note = note + ", allowed (usage.on_unknown: allow)"
			return nil
		}
		d.Verdict, d.RetryAfter = UsageUnknown, ceilSeconds(res.Expires.Sub(e.cfg.Now()))
		d.Note = note + ", which refuses the purpose " + purpose + " (usage.on_unknown: refuse)"
		return nil
	}
	d.TDM = res.Match(d.Request.Target)
	switch {
	case d.TDM.TooCostly:
		d.Verdict = UsageDenied
		d.Note = fmt.Sprintf("tdmrep.json's locations would need more than %d octets of comparisons for this target (tdmrep.MaxMatchWork): counted as reserved, which refuses the purpose %s", tdmrep.MaxMatchWork, purpose)
	case d.TDM.Reserved():
		d.Verdict = UsageDenied
		d.Note = d.TDM.Entry.String() + " has tdm-reservation 1 (TDM rights reserved), which refuses the purpose " + purpose + "; " + policyText(d.TDM.Entry.Policy)
	}
	return nil
}

// isTDMRepFile reports whether target is the tdmrep.json itself, which a
// TDM client may always read (robots.txt still judges it).
func isTDMRepFile(target string) bool {
	path, _, _ := strings.Cut(target, "?")
	return path == tdmrep.Path
}

func policyText(p string) string {
	if p == "" {
		return "no tdm-policy"
	}
	return "tdm-policy " + tdmrep.Quote(p)
}

func causeOrStatus(cause string) string {
	if cause == "" {
		return "no answer"
	}
	return cause
}

// ConsultTDM reads the origin's tdmrep.json for a decision that did not
// (a client without TDM purposes), for /explain and check: d.TDMRep and
// d.TDM are set, the verdict is left as it is. Nothing is read when
// robots.txt was not consulted or the target is the file itself. The
// only error is ctx's.
func (e *Engine) ConsultTDM(ctx context.Context, d *Decision) error {
	if e.cfg.TDMRep == nil || d.TDMRep != nil || d.Robots == nil || isTDMRepFile(d.Request.Target) {
		return nil
	}
	res, err := e.cfg.TDMRep.Lookup(ctx, d.Request.Origin)
	if err != nil {
		return coldLimited(d, err)
	}
	d.TDMRep = res
	if !res.Unknown() {
		d.TDM = res.Match(d.Request.Target)
	}
	return nil
}

// The TDMRep text (W3C TDM Reservation Protocol, CG Final Report, editor's
// copy of 2024-12-14, #sec-processing-priority) orders the places a
// reservation is read: the TDM file, then the header field, whose values
// "supercede any value inferred from a TDM file", then an HTML page's meta
// tags, whose values "supercede previous values"; an absent value does not
// reset one. robotsgate reads the file before the request is sent (a
// reserved page is refused unfetched, so a header cannot lift the file's
// reservation: the conservative side of that order) and the header and
// meta tags of the response in that order.

// tdmHeaderFinding reads the tdm-reservation header field: its field lines
// are one list (RFC 9110 §5.3: "tdm-reservation: 0, 1" is the two lines 0
// and 1), and a member 1 reserves, whatever other members say (two
// values the text does not foresee: the conservative one wins; a member
// other than 0 or 1 is a protocol error, #sec-tdm-reservation, and
// ignored). The finding is listed whenever the field is present.
func tdmHeaderFinding(h http.Header) (finding, bool) {
	lines := h.Values("Tdm-Reservation")
	if len(lines) == 0 {
		return finding{}, false
	}
	v := strings.Join(lines, ", ")
	f := finding{UsageSignal: audit.UsageSignal{Signal: audit.SignalHeaderTDMReservation, Value: quoteValue(v),
		Where: "response header tdm-reservation", Refuses: []string{}}, source: "tdm-reservation", directive: "1", value: v}
	if tdmValue(v) == tdmrep.Reserved {
		f.Refuses, f.Policy = trainingRefuses(), quoteValue(h.Get("Tdm-Policy"))
	}
	return f, true
}

// tdmValue reads a tdm-reservation list (a header field's lines joined, a
// meta tag's content): Reserved when a member is 1, NotReserved when a
// member is 0 and none is 1, Unset otherwise.
func tdmValue(list string) tdmrep.Reservation {
	r := tdmrep.Unset
	for m := range strings.SplitSeq(list, ",") {
		switch strings.TrimSpace(m) {
		case "1":
			return tdmrep.Reserved
		case "0":
			r = tdmrep.NotReserved
		}
	}
	return r
}

// supersedeTDMHeader applies the meta tags' tdm-reservation to the header
// field's: a page whose head states one (0 or 1) supersedes the header's
// (#sec-processing-priority), so the header finding refuses nothing and
// says so. found are the header findings followed by the meta findings.
func supersedeTDMHeader(found []finding) {
	meta := tdmrep.Unset
	for _, f := range found {
		if f.Signal == audit.SignalMetaTDMReservation {
			if r := tdmValue(f.value); r != tdmrep.Unset && meta != tdmrep.Reserved {
				meta = r
			}
		}
	}
	if meta == tdmrep.Unset {
		return
	}
	for i := range found {
		if f := &found[i]; f.Signal == audit.SignalHeaderTDMReservation {
			f.Refuses = []string{}
			f.Where += ` (superseded by <meta name="tdm-reservation" content="` + meta.String() + `">)`
		}
	}
}
