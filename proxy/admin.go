package proxy

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/robotsgate/robotsgate/admin"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/robots"
)

// The proxy is the admin listener's source (admin.Source): its metrics,
// readiness, explanations and status.

// AdminHandler serves the admin endpoints (package admin), answering only
// to admin_hosts besides its own address and asking for credentials with
// admin_auth. Serve it on a separate, loopback address: it shows the
// configuration and traffic; AddSelf keeps the proxy from reaching it.
func (s *Server) AdminHandler() http.Handler {
	cfg := s.settings().cfg
	opts := admin.Options{Log: s.log, Hosts: cfg.AdminHosts}
	if cfg.AdminAuth {
		opts.Authenticate = func(user, password string) bool { return s.settings().engine.CheckUser(user, password) }
	}
	return admin.Handler(s, opts)
}

// Metrics serves the Prometheus registry.
func (s *Server) Metrics() http.Handler { return s.metrics.Handler() }

// Ready is nil once the proxy is serving with a loaded configuration,
// every listener accepts connections (Guard) and, with a shared pacing
// store, that store answers.
func (s *Server) Ready(ctx context.Context) error {
	if !s.serving.Load() {
		return errors.New("not serving yet")
	}
	if err := s.listeners.err(); err != nil {
		return err
	}
	if err := s.evidence.Failing(); err != nil {
		return err
	}
	if s.ready != nil {
		return s.ready(ctx)
	}
	return nil
}

// ReadyNotes tells /readyz which Redis node the instance uses and when it
// last failed over (nothing without a fleet).
func (s *Server) ReadyNotes() []string {
	if s.redis == nil {
		return nil
	}
	return []string{s.redis.Status().String()}
}

// Explain answers /explain with the decision Judge makes.
func (s *Server) Explain(ctx context.Context, q admin.Query) (admin.Explanation, int) {
	e := admin.Explanation{URL: q.URL, UserAgent: q.UserAgent, Purposes: q.Purposes}
	x, err := s.Judge(ctx, q.URL, Asker{UserAgent: q.UserAgent, Addr: q.Client, User: q.User, Purposes: q.Purposes, By: q.By}, q.Fetch)
	switch {
	case err != nil:
		e.Error = err.Error()
		return e, http.StatusBadRequest
	case x.Refused != nil: // what the operator is told of it (Why) is the error
		r := x.Refused
		e.Decision, e.Status, e.Message, e.Error = r.Decision(), r.Status(), r.Message(), r.Why()
		return e, http.StatusOK
	}
	d := &x.Decision
	now := time.Now()
	fillExplanation(&e, d, now)
	if r := x.Refusal(); r != nil { // what the client is told
		e.Status, e.Message = r.Status(), r.Message()
	}
	e.NextSlot = x.NextSlot.Seconds()
	fillPacing(&e, &x, now)
	if x.FetchErr != nil {
		e.FetchError = x.FetchErr.Error()
	}
	e.UsageSignals = x.Signals
	e.TDMRep = tdmrepInfo(d)
	return e, http.StatusOK
}

func tdmrepInfo(d *policy.Decision) *admin.TDMRepInfo {
	t := d.TDMRep
	if t == nil {
		return nil
	}
	info := &admin.TDMRepInfo{URL: t.URL, Status: t.Status.String(), HTTPStatus: t.HTTPStatus}
	if t.Err != nil {
		info.Error = t.Err.Error()
	}
	return info
}

func fillExplanation(e *admin.Explanation, d *policy.Decision, now time.Time) {
	e.Decision, e.Note = d.Verdict.String(), d.Note
	c := d.Request.Client
	e.ClientRule, e.Mode, e.Agent, e.Purposes = c.Name, c.Mode.String(), c.Agent, c.Purposes
	if d.Response != nil {
		e.Note = withheldNote(d.Response, !d.Refused())
	}
	e.Interval, e.PaceKey = d.Interval.Seconds(), d.PaceKey
	if d.Robots == nil {
		return
	}
	res := d.Robots
	e.Robots = &admin.RobotsInfo{URL: res.URL(), Status: res.Status.String(), HTTPStatus: res.HTTPStatus,
		FetchedAt: res.FetchedAt().UTC(), AgeSeconds: res.Age(now).Seconds(), Expires: res.Expires().UTC(), Stale: res.Stale}
	if err := res.Err(); err != nil {
		e.Robots.Error = err.Error()
	}
	if res.File == nil {
		return
	}
	g := d.Rule.Group
	e.Group, e.GroupLines = g.Name(), g.Lines()
	if d.Rule.Matched {
		e.Rule, e.Line, e.Canonical = d.Rule.Rule.String(), d.Rule.Rule.Line, d.Rule.Canonical
	}
	e.CrawlDelay, e.RequestRate = g.CrawlDelay().Seconds(), g.RequestInterval().Seconds()
	e.ContentUsage, e.Signals = prefsOf(g.ContentUsage(d.Request.Target)), prefsOf(res.File.ContentSignals())
}

// prefsOf lists the preferences of statements (an unparsable one states
// none; usage_signals lists it).
func prefsOf(stmts []robots.Statement) []robots.Pref {
	var out []robots.Pref
	for _, s := range stmts {
		out = append(out, s.Prefs...)
	}
	return out
}

// fillPacing adds what the pacing interval is made of, and the origin's
// pause in force.
func fillPacing(e *admin.Explanation, x *Explained, now time.Time) {
	d := &x.Decision
	if d.Verdict == policy.Allow || d.Verdict == policy.OriginPaused {
		e.IntervalCauses = &admin.IntervalCauses{Asked: d.Asked.Seconds(), Floor: d.Floor.Seconds(),
			Adaptive: d.Adaptive.Seconds(), ResponseTime: x.ResponseTime.Seconds(), Capped: d.Asked > d.Interval}
	}
	if p := x.Pause; p != nil {
		left := max(p.Until.Sub(now), 0)
		e.Backoff = &admin.BackoffInfo{Cause: p.Cause(), Status: p.Status, Until: p.Until.UTC(), Remaining: left.Seconds(),
			Refuses: left > x.MaxWait, AwaitingProbe: x.AwaitingProbe}
	}
	for _, w := range d.Visits {
		e.VisitTimes = append(e.VisitTimes, w.String())
	}
}

// Status is what the status page shows at now.
func (s *Server) Status(now time.Time) admin.Status {
	st := s.settings()
	rs := s.resolver.Stats()
	v := admin.Status{
		Started: s.stats.Started(), Now: now, Listen: st.cfg.Listen, Admin: st.cfg.AdminListen,
		MITM: st.cfg.MITM.Enabled, StrictPaths: st.cfg.Robots.StrictPaths, Clients: len(st.cfg.Clients),
		Sites: len(st.cfg.Sites), BlockPrivate: st.cfg.Egress.BlockPrivateNetworks,
		Cached: rs.Entries, Hits: rs.Hits, Misses: rs.Misses,
	}
	s.stats.View(20, now, &v)
	for _, p := range s.governor.PausedNow(20) {
		v.Paused = append(v.Paused, admin.PausedOrigin{Origin: p.Origin, Cause: p.Pause.Cause(), Until: p.Pause.Until.UTC(),
			Left: max(p.Pause.Until.Sub(now).Round(time.Second), 0), AwaitingProbe: p.AwaitingProbe})
	}
	v.TLSFailures, v.TLSLast = s.tlsFails.Snapshot()
	return v
}
