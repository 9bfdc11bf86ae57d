package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/robotsgate/robotsgate/admin"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/doccache"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// An operator refreshes what robotsgate knows of an origin when the site
// changed its robots.txt, or the origin was fixed: its robots.txt and
// tdmrep.json are fetched again now (a restart was the only way before:
// SIGHUP keeps the cache, and a file without Cache-Control is kept 24 h),
// and its pause is ended, in the whole fleet when pauses are shared. The
// admin listener's POST /refresh and `robotsgate refresh` do it; it is
// logged and written to the audit log.

// Refresh implements admin.Refresher for the origin of rawURL, asked by
// by. The error is an origin that is not one, or that the egress rules
// refuse.
func (s *Server) Refresh(ctx context.Context, rawURL, by string) (admin.Refreshed, error) {
	o, err := origin.Parse(rawURL)
	if err != nil {
		return admin.Refreshed{}, fmt.Errorf("refresh %q: %w", rawURL, err)
	}
	if err := s.checkDestination(ctx, o, false); err != nil {
		return admin.Refreshed{}, fmt.Errorf("refresh %s: %w", o, err)
	}
	start := time.Now()
	res, tdm := s.resolver.Refetch(o), s.tdmrep.Refetch(o)
	out := admin.Refreshed{Origin: o.String(), Robots: robotsInfo(res, time.Now()), TDMRep: tdmInfo(tdm), Licenses: s.refetchLicenses(o, res)}
	if p, ok := s.governor.Paused(o.String()); ok {
		out.PauseCleared = p.Cause()
	}
	if err := s.governor.Clear(ctx, o.String()); err != nil {
		s.log.Warn("refresh: the fleet's store did not end the pause: other instances keep it", "origin", o.String(), "err", err)
	}
	s.log.Warn("an operator refreshed an origin: robots.txt and tdmrep.json fetched again, its pause ended",
		"origin", o.String(), "by", by, "robots", res.Status.String(), "pause_cleared", out.PauseCleared)
	s.auditRefresh(start, by, res, &out)
	return out, nil
}

// auditRefresh records an operator's refresh: the robots.txt fetched, as
// a request for it (always allowed), noting what was done.
func (s *Server) auditRefresh(start time.Time, by string, res *resolver.Result, out *admin.Refreshed) {
	rec := audit.Record{Time: start.UTC(), Client: by, Mode: "enforce", Method: http.MethodGet, Via: audit.ViaAdmin,
		URL: res.URL(), Decision: audit.Allow, Enforced: true, RobotsStatus: res.Status.String(), RobotsURL: res.URL(),
		RobotsSHA256: res.SHA256(), UpstreamStatus: res.HTTPStatus, Note: "refreshed by an operator (admin /refresh): robots.txt and tdmrep.json fetched again"}
	if out.PauseCleared != "" {
		rec.AddNote("pause ended early: " + out.PauseCleared)
	}
	rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	rec.Cap()
	s.evidence.Write(&rec)
}

// robotsInfo describes a robots.txt result for the admin listener.
func robotsInfo(res *resolver.Result, now time.Time) *admin.RobotsInfo {
	info := &admin.RobotsInfo{URL: res.URL(), Status: res.Status.String(), HTTPStatus: res.HTTPStatus,
		FetchedAt: res.FetchedAt().UTC(), AgeSeconds: res.Age(now).Seconds(), Expires: res.Expires().UTC(), Stale: res.Stale}
	if err := res.Err(); err != nil {
		info.Error = err.Error()
	}
	return info
}

// refetchLicenses fetches again the RSL licences res's robots.txt names
// (at most robots.MaxLicenses, relative ones resolved against the origin,
// each through the egress guard), and describes them.
func (s *Server) refetchLicenses(o origin.Origin, res *resolver.Result) []admin.TDMRepInfo {
	if res.File == nil {
		return nil
	}
	base, err := url.Parse(o.URL("/"))
	if err != nil {
		return nil
	}
	var out []admin.TDMRepInfo
	for _, l := range res.File.Licenses() {
		ref, err := url.Parse(l.URL)
		if err != nil {
			continue
		}
		u := base.ResolveReference(ref)
		u.Fragment, u.RawFragment = "", ""
		r := s.rsl.Refetch(u.String())
		if r == nil {
			continue // not http(s)
		}
		info := admin.TDMRepInfo{URL: r.URL, Status: r.Status.String(), HTTPStatus: r.HTTPStatus, Error: r.Cause()}
		out = append(out, info)
	}
	return out
}

// tdmInfo describes a tdmrep.json result for the admin listener.
func tdmInfo(t *doccache.TDMRepResult) *admin.TDMRepInfo {
	info := &admin.TDMRepInfo{URL: t.URL, Status: t.Status.String(), HTTPStatus: t.HTTPStatus}
	if t.Err != nil {
		info.Error = t.Err.Error()
	}
	return info
}
