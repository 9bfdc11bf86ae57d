package policy

import (
	"context"
	"fmt"
	"strings"

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
