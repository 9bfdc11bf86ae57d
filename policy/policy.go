// Package policy decides what happens to one request: who is asking and how
// they are treated (clients), which robots.txt and group apply, whether the
// path is allowed (with the evasion guard), site overrides, the crawler-trap
// guard and AI-usage signals (robots.txt lines, tdmrep.json, response headers
// and meta tags). It is the one place that turns a request
// into a typed Decision; the proxy renders decisions and never decides.
//
// It must not write responses or relay anything, and must not fetch by
// itself: robots.txt and tdmrep.json come from the resolver and caches it
// is given.
package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/doccache"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/robots"
	"github.com/robotsgate/robotsgate/robots/resolver"
	"github.com/robotsgate/robotsgate/rsl"
	"github.com/robotsgate/robotsgate/tdmrep"
)

// Verdict is the outcome of a decision.
type Verdict uint8

// Verdicts. Allow is the zero value.
const (
	Allow            Verdict = iota
	Disallow                 // robots.txt forbids the path for the agent (403)
	Unreachable              // robots.txt could not be fetched: everything refused (503)
	UsageDenied              // an AI-usage preference refuses the client's purpose (403)
	TrapDenied               // the crawler-trap guard's URL limits (403)
	TrapBudget               // the trap guard's page budget is spent (429)
	RateLimited              // the pacing slot lies beyond pacing.max_wait (429)
	PacingDown               // the shared pacing store cannot answer (503)
	UsageUnknown             // the site's TDM reservations (tdmrep.json) cannot be fetched (503)
	FetchLimited             // the client has too many lookups of uncached origins in flight (503)
	OriginPaused             // the origin asked to slow down and its pause lasts beyond pacing.max_wait (429)
	OutsideVisitTime         // robots.txt's Visit-time windows do not include now (429)
	LicenseRequired          // an RSL licence grants the purpose only with a licence server's token (403)
)

var verdictNames = [...]string{
	Allow: audit.Allow, Disallow: audit.Disallow, Unreachable: audit.Unreachable,
	UsageDenied: audit.UsageDenied, TrapDenied: audit.TrapDenied, TrapBudget: audit.TrapDenied,
	RateLimited: audit.RateLimited, PacingDown: audit.PacingUnavailable, UsageUnknown: audit.UsageUnknown,
	FetchLimited: audit.FetchLimited, OriginPaused: audit.OriginBackoff, OutsideVisitTime: audit.OutsideVisitTime,
	LicenseRequired: audit.LicenseRequired,
}

// String returns the decision name used in headers and logs ("disallow").
func (v Verdict) String() string { return verdictNames[v] }

// Request is what a decision is about.
type Request struct {
	Origin origin.Origin
	// Target is the request-target exactly as the client sent it
	// (path[;params][?query]).
	Target string
	// UserAgent is the client's User-Agent header, "" when absent.
	UserAgent string
	// Client is who is asking (Engine.Identify).
	Client Client
	// LicenseToken: the request carries an RSL licence token of the
	// client's own (Authorization: License …, HasLicenseToken), which a
	// licence server's content then needs no refusal for: the origin
	// checks the token.
	LicenseToken bool
	// At, when valid, is the address the request goes to whatever its
	// name resolves to (a transparent client's original destination): its
	// robots.txt is the one served there (resolver.ResolveAt), so that a
	// name with several addresses never lets one server's robots.txt
	// judge a request to another.
	At netip.AddrPort
}

// Agent returns what the request is judged as: the client's fixed agent
// name, or else its User-Agent header.
func (r *Request) Agent() string {
	if r.Client.Agent != "" {
		return r.Client.Agent
	}
	return r.UserAgent
}

// Decision is the verdict on a Request with everything needed to explain it.
type Decision struct {
	Verdict Verdict
	Request Request
	// Robots is the robots.txt verdict the decision rests on; nil when
	// robots.txt was not consulted (robots.txt itself, bypass, an ignored
	// site, a trap refusal).
	Robots *resolver.Result
	// Rule is the robots.txt judgement when there were rules (Robots.File).
	Rule robots.Decision
	// Note says why robots.txt was not consulted or what refused the
	// request besides a rule ("bypass", a trap limit, the refusing
	// preference).
	Note string
	// Pref is the robots.txt AI-usage preference that refused the request
	// (UsageDenied): a Content-Signal line's when PrefSignal, else a
	// Content-Usage line's.
	Pref       robots.Pref
	PrefSignal bool
	// TDMRep is the origin's tdmrep.json as consulted for a client with a
	// text-and-data-mining purpose; nil when it was not (other clients,
	// or a request refused before). TDM is what it says about the target:
	// the first matching entry, which refused the request (UsageDenied)
	// when it reserves TDM rights.
	TDMRep *doccache.TDMRepResult
	TDM    tdmrep.Match
	// Response is the signal of the origin's response that refused the
	// request (ApplyResponse); nil until a response refused it.
	Response *ResponseRefusal
	// Licences are the RSL licences of the robots.txt License lines
	// consulted for a client with purposes (policy/rsl.go); Licence is
	// the licence that refused the request (UsageDenied, LicenseRequired,
	// UsageUnknown), whether named in robots.txt or by the response; nil
	// when none did.
	Licences []*Licence
	Licence  *Licence
	// licensing judges the licences a response names (ResponseJudge).
	licensing *licensing
	// coldGate is the client's cold gate the decision was made under
	// (resolver.WithColdGate), which the licences its response names pass
	// too; nil: none.
	coldGate resolver.ColdGate
	// RetryAfter is when asking again makes sense (Unreachable, TrapBudget,
	// RateLimited, PacingDown, UsageUnknown, OriginPaused,
	// OutsideVisitTime).
	RetryAfter time.Duration
	// Interval is how far apart requests judged like this one must start
	// (Crawl-delay or Request-rate, the operator's floor and cap); 0 when
	// not paced. PaceKey names the schedule (origin, and group unless
	// pacing.key is "origin").
	Interval time.Duration
	PaceKey  string
	// Waited is how long Pace held the request.
	Waited time.Duration
	// StrictPaths is the robots.strict_paths setting that judged the
	// request (the evasion guard on or off), for replaying the decision.
	StrictPaths bool
	// ScanHTML is the usage.scan_html setting the response is to be judged
	// with (ResponseJudge); unknownAllow is usage.on_unknown: allow.
	ScanHTML     bool
	unknownAllow bool
	// Limit is what rate-limited the request (RateLimited): one of
	// pacing.ReasonSlot, ReasonConcurrency, ReasonOverMaxDelay.
	Limit string
	// Asked is the interval robots.txt asked for (Crawl-delay or
	// Request-rate), Floor the operator's floor that applied
	// (pacing.default_delay or the site's delay) and Adaptive the interval
	// adaptive pacing asked (0 when off): Interval is the largest, within
	// pacing.max_delay for Asked.
	Asked, Floor, Adaptive time.Duration
	// Pause is the origin's pause that held the request (Paused of
	// Waited) or refused it (OriginPaused); nil when none did.
	Pause  *pacing.Pause
	Paused time.Duration
	// Visits are the group's Visit-time windows, when it has some; none
	// includes now for OutsideVisitTime.
	Visits robots.VisitWindows
	// origin is Request.Origin.String(), once asked (originKey).
	origin string
}

// originKey is the request's origin as the governor names it, spelled out
// once per decision.
func (d *Decision) originKey() string {
	if d.origin == "" {
		d.origin = d.Request.Origin.String()
	}
	return d.origin
}

// Group returns the name of the robots.txt group that judged the request
// ("*", a product token, or "" when none applied).
func (d *Decision) Group() string { return d.Rule.Group.Name() }

// Refused reports whether the proxy must refuse the request: the verdict is
// not Allow and the client is enforced (a monitored client's refusals are
// only logged).
func (d *Decision) Refused() bool {
	return d.Verdict != Allow && d.Request.Client.Mode == Enforce
}

// Config is what an Engine needs.
type Config struct {
	// Resolver provides robots.txt files.
	Resolver *resolver.Resolver
	// TDMRep provides tdmrep.json files, for clients with a text-and-data-
	// mining purpose (trainingPurposes); nil means they are not read.
	// TDMUnknown is usage.on_unknown: what those clients get while the
	// file cannot be fetched.
	TDMRep     *doccache.TDMRepCache
	TDMUnknown config.UsageOnUnknown
	// RSL provides RSL documents, for clients with purposes; nil means
	// licences are not read. An unreadable one follows TDMUnknown
	// (usage.on_unknown); LicenseServer is usage.on_license_server.
	RSL           *doccache.RSLCache
	LicenseServer config.UsageOnUnknown
	// RSLUnstated is usage.rsl_unstated_usage: what a licence that states
	// no usage grants.
	RSLUnstated config.RSLUnstated
	// StrictPaths also judges the canonical path (robots.Group.DecideStrict).
	StrictPaths bool
	// ScanHTML reads the meta tags of HTML responses for their AI-usage
	// signals (usage.scan_html; Decision.ResponseJudge).
	ScanHTML bool
	Clients  []config.Client
	Auth     config.Auth
	// DenyUnmatched refuses clients no Clients entry matches
	// (clients_default: deny): ErrClientDenied, or ErrAuthRequired when
	// proxy users are configured.
	DenyUnmatched bool
	Sites         []config.Site
	Trap          config.Trap
	// Pacer holds requests until their slot; nil means no pacing.
	Pacer *pacing.Pacer
	// Limits are the operator's floor and cap on intervals.
	Limits pacing.Limits
	// PaceByOrigin keys schedules by origin only, not origin and group.
	PaceByOrigin bool
	// Governor keeps the origins' pauses and response times (pacing.backoff,
	// pacing.adaptive); nil means neither.
	Governor *pacing.Governor
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Engine makes decisions. It is safe for concurrent use.
type Engine struct {
	cfg       Config
	licensing *licensing // nil without Config.RSL
	clients   *Clients
	sites     sites
	trap      *trapGuard
}

// New returns an Engine.
func New(cfg Config) (*Engine, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	clients, err := NewClients(cfg.Clients, cfg.Auth)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	clients.denyUnmatched = cfg.DenyUnmatched
	e := &Engine{cfg: cfg, clients: clients, sites: newSites(cfg.Sites), trap: newTrapGuard(cfg.Trap)}
	if cfg.RSL != nil {
		e.licensing = &licensing{cache: cfg.RSL, onUnknown: cfg.TDMUnknown, onServer: cfg.LicenseServer, now: cfg.Now,
			opts: rsl.Options{GrantUnstated: cfg.RSLUnstated == config.RSLUnstatedGrant}}
	}
	return e, nil
}

// Identify returns the client a request comes from (see Clients.Identify).
func (e *Engine) Identify(addr netip.Addr, proxyAuthorization string) (Client, error) {
	return e.clients.Identify(addr, proxyAuthorization)
}

// IdentifyAs returns the client a request from addr authenticated as user
// would be (see Clients.IdentifyAs).
func (e *Engine) IdentifyAs(addr netip.Addr, user string) (Client, error) {
	return e.clients.IdentifyAs(addr, user)
}

// CheckUser reports whether user and password are an auth.htpasswd
// user's (see Clients.CheckUser).
func (e *Engine) CheckUser(user, password string) bool { return e.clients.CheckUser(user, password) }

// Realm is the realm of the 407 challenge.
func (e *Engine) Realm() string { return e.clients.Realm() }

// Decide judges one request. The only error is ctx's, when the caller gave
// up while robots.txt (or tdmrep.json) was being fetched; a lookup that
// found no place in the client's cold gate is a FetchLimited decision.
func (e *Engine) Decide(ctx context.Context, req Request) (Decision, error) {
	d := Decision{Request: req, StrictPaths: e.cfg.StrictPaths, ScanHTML: e.cfg.ScanHTML, licensing: e.licensing,
		unknownAllow: e.cfg.TDMUnknown == config.UsageUnknownAllow, coldGate: resolver.ColdGateOf(ctx)}
	if note, skip := e.skipRobots(&req); skip {
		d.Note = note
		e.schedule(&d, 0)
		return d, nil
	}
	if note, ok := e.trap.checkURL(req.Target); !ok {
		d.Verdict, d.Note = TrapDenied, note
		return d, nil
	}
	res, err := e.cfg.Resolver.ResolveAt(ctx, req.Origin, req.At)
	if err != nil {
		return d, coldLimited(&d, err)
	}
	d.Robots = res
	e.judge(&d, res)
	if d.Verdict == Allow {
		e.judgeVisit(&d)
	}
	if d.Verdict == Allow {
		if err := e.judgeTDM(ctx, &d); err != nil {
			return d, err
		}
	}
	if d.Verdict == Allow {
		if err := e.judgeRSL(ctx, &d); err != nil {
			return d, err
		}
	}
	if d.Verdict == Allow {
		if wait, ok := e.trap.spend(req.Origin, e.cfg.Now()); !ok {
			d.Verdict, d.Note, d.RetryAfter = TrapBudget, "the origin's page budget (trap.page_budget) is spent", ceilSeconds(wait)
		}
	}
	if d.Verdict == Allow {
		e.schedule(&d, d.Rule.Group.Interval()) // 0 without rules (unavailable robots.txt)
	}
	return d, nil
}

// schedule sets the pacing of an allowed, enforced request: the interval
// robots.txt asks for (asked), raised to the operator's floor (the site's
// delay, else pacing.default_delay) and capped or refused above
// pacing.max_delay. Robots.txt itself, bypass clients and monitored ones
// are never held.
func (e *Engine) schedule(d *Decision, asked time.Duration) {
	if d.Request.Client.Mode != Enforce || robots.IsRobotsTxt(d.Request.Target) {
		return
	}
	limits := e.cfg.Limits
	if s, ok := e.sites.match(d.Request.Origin.Host); ok && s.delay > 0 {
		limits.Floor = s.delay
	}
	d.Asked, d.Floor = asked, limits.Floor
	interval, err := limits.Interval(asked)
	if err != nil {
		var refused *pacing.RefusedError
		errors.As(err, &refused)
		d.Verdict, d.Note = RateLimited, err.Error()
		if refused != nil {
			d.RetryAfter = ceilSeconds(refused.RetryAfter)
			d.Limit = refused.Reason
		}
		return
	}
	if e.cfg.Governor.Adapting() {
		d.Adaptive = e.cfg.Governor.AdaptiveInterval(d.originKey())
	}
	d.Interval = max(interval, d.Adaptive)
	if interval > 0 {
		d.PaceKey = e.paceKey(d)
	}
}

// paceKey names a request's schedule: its origin, and its group unless
// pacing.key is "origin".
func (e *Engine) paceKey(d *Decision) string {
	if e.cfg.PaceByOrigin {
		return d.Request.Origin.String()
	}
	return d.Request.Origin.String() + " " + d.Group()
}

// Pace holds an allowed request until its pacing slot (and per-origin
// concurrency permit), while its origin is paused, and after a pause
// until the answer to the request sent first (the probe). When the wait
// would exceed pacing.max_wait, or the shared store cannot answer, it
// changes d into a refusal (RateLimited, OriginPaused, PacingDown) and
// returns a zero Permit. The error is ctx's alone: the client hung up
// while held. Call the Permit's Answered when the origin answered (after
// ObserveAnswer), and Release it when the request is done.
func (e *Engine) Pace(ctx context.Context, d *Decision) (pacing.Permit, error) {
	p := e.cfg.Pacer
	if p == nil || d.Verdict != Allow || d.Request.Client.Mode != Enforce {
		return pacing.Permit{}, nil
	}
	// robotsgate's own fetches (OwnFetch) are not counted in
	// pacing.max_concurrency: a licence a response names on its own
	// origin would wait for the permit that response holds.
	limited := p.Limited() && !d.Request.Client.OwnFetch
	if d.Interval <= 0 && !limited && !e.cfg.Governor.Pausing() {
		return pacing.Permit{}, nil // the common case: nothing to hold for
	}
	pauseKey := e.pauseKey(d)
	if d.Interval <= 0 && !limited && !e.holds(pauseKey) {
		return pacing.Permit{}, nil
	}
	req := pacing.Request{Key: d.PaceKey, Interval: d.Interval, PauseKey: pauseKey}
	if limited {
		req.Origin = d.Request.Origin.String()
	}
	permit, err := p.Acquire(ctx, req)
	if err != nil {
		return pacing.Permit{}, refusedByPacing(d, err)
	}
	d.Waited = permit.Waited
	if permit.Paused > 0 {
		pause := permit.Pause
		d.Paused, d.Pause = permit.Paused, &pause
	}
	return permit, nil
}

// Repause changes d, allowed and paced (Pace), into OriginPaused when its
// origin is paused now, and reports whether it did. Pace checks the pause
// when it lets a request go; the request is written to the origin later
// (a connection to get, a body to start). A 429 answered to another
// request in between pauses the origin, and this request must not follow
// it: the proxy calls Repause right before the request is written. The
// common case (no origin paused anywhere) is one atomic load.
func (e *Engine) Repause(d *Decision) bool {
	g := e.cfg.Governor
	if !g.Pausing() || d.Verdict != Allow || d.Request.Client.Mode != Enforce {
		return false
	}
	key := e.pauseKey(d)
	if key == "" {
		return false
	}
	p, ok := g.Paused(key)
	if !ok {
		return false
	}
	refusedByPacing(d, &pacing.PausedError{Pause: p, RetryAfter: time.Until(p.Until)})
	return true
}

// refusedByPacing turns the pacer's refusal into d's verdict; any other
// error (the client left) is returned.
func refusedByPacing(d *Decision, err error) error {
	var refused *pacing.RefusedError
	var paused *pacing.PausedError
	var down *pacing.UnavailableError
	switch {
	case errors.As(err, &refused):
		d.Verdict, d.Note, d.RetryAfter = RateLimited, refused.Error(), ceilSeconds(refused.RetryAfter)
		d.Limit = refused.Reason
	case errors.As(err, &paused):
		pause := paused.Pause
		d.Verdict, d.Pause, d.RetryAfter = OriginPaused, &pause, ceilSeconds(paused.RetryAfter)
		d.Note = pause.Cause() + ": robotsgate pauses requests to it until " + pause.Until.UTC().Format("15:04:05Z") + " (pacing.backoff)"
		if paused.Probing {
			d.Note = pause.Cause() + ": robotsgate holds requests to it until the first one after the pause is answered (pacing.backoff)"
		}
	case errors.As(err, &down):
		d.Verdict, d.Note, d.RetryAfter = PacingDown, "the shared pacing store is unavailable (pacing.on_store_error: refuse)", ceilSeconds(down.RetryAfter)
	default:
		return err
	}
	return nil
}

// pauseKey names the origin whose pauses hold d: "" when pauses do not
// apply to it (no governor, robots.txt itself, a client or site set to
// ignore them).
func (e *Engine) pauseKey(d *Decision) string {
	if e.cfg.Governor == nil || d.Request.Client.IgnoreBackoff || robots.IsRobotsTxt(d.Request.Target) {
		return ""
	}
	if s, ok := e.sites.match(d.Request.Origin.Host); ok && s.noBackoff {
		return ""
	}
	return d.originKey()
}

// holds reports whether the origin named by pauseKey holds its requests
// now: it is paused, or its probe after a pause is awaited.
func (e *Engine) holds(pauseKey string) bool {
	return pauseKey != "" && e.cfg.Governor.Holds(pauseKey)
}

// PauseOf returns the pause that would hold a request judged like d now
// (for /explain and check), nil when none; probe reports that the pause is
// over and requests wait for the answer to the first one sent after it.
func (e *Engine) PauseOf(d *Decision) (pause *pacing.Pause, probe bool) {
	key := e.pauseKey(d)
	if key == "" {
		return nil, false
	}
	if p, ok := e.cfg.Governor.Paused(key); ok {
		return &p, false
	}
	if p, ok := e.cfg.Governor.AwaitsProbe(key); ok {
		return &p, true
	}
	return nil, false
}

// ObserveAnswer takes the origin's answer to a request of d's origin into
// account: a 429 or 503 (pacing.backoff.statuses) pauses the origin
// unless its site ignores pauses, and the response time counts for
// adaptive pacing. It returns the pause the answer started or lengthened.
func (e *Engine) ObserveAnswer(ctx context.Context, d *Decision, a pacing.Answer) (pacing.Pause, bool) {
	g := e.cfg.Governor
	if !g.Heeds(a) {
		return pacing.Pause{}, false
	}
	o := d.originKey()
	if s, ok := e.sites.match(d.Request.Origin.Host); ok && s.noBackoff {
		g.ObserveLatency(ctx, o, a.Latency)
		return pacing.Pause{}, false
	}
	return g.Observe(ctx, o, a)
}

// judgeVisit refuses a request outside the group's Visit-time windows,
// with a Retry-After to the next window's start.
func (e *Engine) judgeVisit(d *Decision) {
	ws := d.Rule.Group.VisitTimes()
	if len(ws) == 0 || d.Request.Client.Mode == Bypass || robots.IsRobotsTxt(d.Request.Target) {
		return
	}
	d.Visits = ws
	open, wait := ws.Open(e.cfg.Now())
	if open {
		return
	}
	d.Verdict, d.RetryAfter = OutsideVisitTime, ceilSeconds(wait)
	d.Note = "robots.txt asks for visits only within " + visitText(ws) + " (UTC)"
}

// visitText lists windows as robots.txt writes them, with their lines.
func visitText(ws robots.VisitWindows) string {
	var b strings.Builder
	for i, w := range ws {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (line %d)", w, w.Line)
	}
	return b.String()
}

// NextSlot returns how long a request judged like d would wait for its
// slot now (for /explain); 0 when it is not paced.
func (e *Engine) NextSlot(ctx context.Context, d *Decision) (time.Duration, error) {
	if e.cfg.Pacer == nil || d.PaceKey == "" {
		return 0, nil
	}
	return e.cfg.Pacer.Store().Pending(ctx, d.PaceKey)
}

// skipRobots reports the requests robots.txt does not judge.
func (e *Engine) skipRobots(req *Request) (string, bool) {
	switch {
	case robots.IsRobotsTxt(req.Target):
		return "robots.txt itself is always allowed", true
	case req.Client.Mode == Bypass:
		return "client in bypass mode", true
	}
	if s, ok := e.sites.match(req.Origin.Host); ok && s.ignore {
		return "site set to ignore robots.txt", true
	}
	return "", false
}

// judge applies the robots.txt verdict (rules, or what stands in for them)
// and the AI-usage preferences.
func (e *Engine) judge(d *Decision, res *resolver.Result) {
	switch {
	case res.File != nil:
		g := res.File.GroupForUserAgent(d.Request.Agent())
		if e.cfg.StrictPaths {
			d.Rule = g.DecideStrict(d.Request.Target)
		} else {
			d.Rule = g.Decide(d.Request.Target)
		}
		if !d.Rule.Allowed {
			d.Verdict = Disallow
			if d.Rule.TooCostly {
				d.Note = fmt.Sprintf("the rules would need more than %d octets of comparisons for this target (robots.MaxMatchWork): refused without a verdict", robots.MaxMatchWork)
			}
			return
		}
		if pref, fromSignal, refused := usageRefusal(res.File, g, d.Request.Target, d.Request.Client.Purposes); refused {
			d.Verdict, d.Pref, d.PrefSignal = UsageDenied, pref, fromSignal
			d.Note = fmt.Sprintf("%s=%s (line %d) refuses the purpose", pref.Name, pref.Value, pref.Line)
		}
	case res.Status == resolver.Unreachable:
		d.Verdict = Unreachable
		d.RetryAfter = ceilSeconds(res.Expires().Sub(e.cfg.Now()))
	}
}

// DecideHost judges a host without a path, for tunnels that are not
// intercepted: refused when robots.txt is unreachable or refuses every path
// to the agent.
func (e *Engine) DecideHost(ctx context.Context, req Request) (Decision, error) {
	req.Target = "/"
	d := Decision{Request: req}
	if note, skip := e.skipRobots(&req); skip {
		d.Note = note
		return d, nil
	}
	res, err := e.cfg.Resolver.ResolveAt(ctx, req.Origin, req.At)
	if err != nil {
		return d, coldLimited(&d, err)
	}
	d.Robots = res
	switch {
	case res.File != nil:
		d.Rule = res.File.GroupForUserAgent(req.Agent()).DecideHost()
		if !d.Rule.Allowed {
			d.Verdict = Disallow
		}
	case res.Status == resolver.Unreachable:
		d.Verdict = Unreachable
		d.RetryAfter = ceilSeconds(res.Expires().Sub(e.cfg.Now()))
	}
	return d, nil
}

// coldLimitRetry is the Retry-After of a FetchLimited refusal: the
// client's other lookups take a fetch each, seconds at most.
const coldLimitRetry = 2 * time.Second

// coldLimited turns a lookup that found no place in the client's cold
// gate into a FetchLimited decision (nil error); any other error is
// returned as it is.
func coldLimited(d *Decision, err error) error {
	if !errors.Is(err, resolver.ErrColdLimit) {
		return err
	}
	d.Verdict, d.RetryAfter = FetchLimited, coldLimitRetry
	d.Note = "this client has too many lookups of uncached origins in flight (robots.cold_fetches_per_client)"
	return nil
}

// ceilSeconds rounds up to whole seconds, at least one (Retry-After).
func ceilSeconds(d time.Duration) time.Duration {
	return max(time.Second, time.Duration(math.Ceil(d.Seconds()))*time.Second)
}
