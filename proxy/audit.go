package proxy

import (
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// newAuditRecord fills what a decision tells.
func newAuditRecord(start time.Time, remoteAddr, method string, d *policy.Decision) audit.Record {
	r := audit.Record{
		Time: start.UTC(), Client: remoteAddr, User: d.Request.Client.User, ClientRule: d.Request.Client.Name,
		Mode: d.Request.Client.Mode.String(), UserAgent: d.Request.UserAgent, Agent: d.Request.Agent(),
		Group: d.Group(), Method: method, URL: d.Request.Origin.URL(d.Request.Target),
		Decision: d.Verdict.String(), Enforced: d.Refused() || d.Verdict == policy.Allow, Note: d.Note,
	}
	if d.Rule.Matched {
		r.Rule, r.Line, r.Canonical = d.Rule.Rule.String(), d.Rule.Rule.Line, d.Rule.Canonical
		if d.Rule.Decoded && !d.Rule.Allowed {
			r.AddNote("judged on the path as the origin decodes it, reserved characters too")
		}
	}
	r.StrictPaths = d.StrictPaths
	if d.Pause != nil {
		r.Backoff = backoffText(d.Pause)
		r.BackoffMS = float64(d.Paused.Microseconds()) / 1000
	}
	if d.Response != nil {
		r.AddNote(withheldNote(d.Response, !d.Refused()))
	}
	r.Usage = d.UsageSignals()
	if t := d.TDMRep; t != nil {
		r.TDMRepStatus, r.TDMRepSHA256 = t.Status.String(), t.SHA256
		if t.Unknown() || t.Stale {
			r.TDMRepError = t.Cause()
		}
		if d.TDM.Entry != nil {
			index := d.TDM.Entry.Index
			r.TDMEntry = &index
		}
	}
	if d.Robots != nil {
		r.RobotsStatus, r.RobotsURL, r.RobotsSHA256 = d.Robots.Status.String(), d.Robots.URL(), d.Robots.SHA256()
		if d.Robots.Status == resolver.Unreachable || d.Robots.Stale {
			r.RobotsError = d.Robots.Cause()
		}
	}
	return r
}
