// Package policy decides what happens to one request: which robots.txt and
// which group of it apply, whether the path is allowed (with the evasion
// guard), and what stands in for rules when robots.txt could not be had.
// It is the one place that turns a request into a typed Decision; the proxy
// renders decisions into responses and never decides itself.
package policy

import (
	"context"
	"math"
	"time"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// Verdict is the outcome of a decision.
type Verdict uint8

// Verdicts. Allow is the zero value.
const (
	Allow       Verdict = iota
	Disallow            // robots.txt forbids the path for the agent
	Unreachable         // robots.txt could not be fetched: everything refused
)

var verdictNames = [...]string{Allow: "allow", Disallow: "disallow", Unreachable: "unreachable"}

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
}

// Decision is the verdict on a Request with everything needed to explain it.
type Decision struct {
	Verdict Verdict
	Request Request
	// Robots is the robots.txt verdict the decision rests on (nil for
	// requests for /robots.txt itself, which are always allowed).
	Robots *resolver.Result
	// Rule is the robots.txt judgement when there were rules (Robots.File).
	Rule robots.Decision
	// RetryAfter is when asking again makes sense, for Unreachable.
	RetryAfter time.Duration
}

// Group returns the name of the robots.txt group that judged the request
// ("*", a product token, or "" when none applied).
func (d *Decision) Group() string { return d.Rule.Group.Name() }

// Config is what an Engine needs.
type Config struct {
	// Resolver provides robots.txt files.
	Resolver *resolver.Resolver
	// StrictPaths also judges the canonical path (robots.Group.DecideStrict).
	StrictPaths bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Engine makes decisions. It is safe for concurrent use.
type Engine struct {
	cfg Config
}

// New returns an Engine.
func New(cfg Config) *Engine {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Engine{cfg: cfg}
}

// Decide judges one request. The only error is ctx's, when the caller gave
// up while robots.txt was being fetched.
func (e *Engine) Decide(ctx context.Context, req Request) (Decision, error) {
	d := Decision{Request: req}
	if robots.IsRobotsTxt(req.Target) {
		return d, nil // RFC 9309 §2.2.2: always allowed
	}
	res, err := e.cfg.Resolver.Resolve(ctx, req.Origin)
	if err != nil {
		return d, err
	}
	d.Robots = res
	switch {
	case res.File != nil:
		g := res.File.GroupForUserAgent(req.UserAgent)
		if e.cfg.StrictPaths {
			d.Rule = g.DecideStrict(req.Target)
		} else {
			d.Rule = g.Decide(req.Target)
		}
		if !d.Rule.Allowed {
			d.Verdict = Disallow
		}
	case res.Status == resolver.Unreachable:
		d.Verdict = Unreachable
		d.RetryAfter = e.retryAfter(res)
	}
	return d, nil
}

// DecideHost judges a host without a path, for tunnels that are not
// intercepted: refused when robots.txt is unreachable or refuses every path
// to the agent.
func (e *Engine) DecideHost(ctx context.Context, o origin.Origin, userAgent string) (Decision, error) {
	d := Decision{Request: Request{Origin: o, Target: "/", UserAgent: userAgent}}
	res, err := e.cfg.Resolver.Resolve(ctx, o)
	if err != nil {
		return d, err
	}
	d.Robots = res
	switch {
	case res.File != nil:
		g := res.File.GroupForUserAgent(userAgent)
		d.Rule = g.Decide("/")
		if g.DisallowsAll() {
			d.Verdict = Disallow
		} else {
			d.Rule.Allowed = true // paths cannot be judged: the host is allowed
		}
	case res.Status == resolver.Unreachable:
		d.Verdict = Unreachable
		d.RetryAfter = e.retryAfter(res)
	}
	return d, nil
}

// retryAfter is the time to the next fetch attempt, at least a second.
func (e *Engine) retryAfter(res *resolver.Result) time.Duration {
	wait := res.Expires().Sub(e.cfg.Now())
	return max(time.Second, time.Duration(math.Ceil(wait.Seconds()))*time.Second)
}
