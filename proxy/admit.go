package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/refusal"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// Every way a request reaches robotsgate is decided by admit: an
// absolute-form request on the proxy port, a CONNECT (intercepted, blind or
// refused), a request inside an intercepted tunnel, /explain and check. Each
// tells admit what it knows of the request; admit identifies the client,
// checks the destination, asks the policy engine, holds the request for its
// pacing slot, and logs and records the decision of proxied traffic. Its
// outcome is a decision, or a refusal (a *refusal.Refusal) made before one; each
// way in renders a refusal at its edge, and /explain and check show the
// same value.

// route is how a request reaches admission, which follows from it: how
// its client is identified, whether its destination is checked, what is
// decided (the request, or only its host), and whether it is held for its
// pacing slot (it is to be sent).
type route uint8

const (
	// routeProxyPort is an absolute-form request on the proxy port: its
	// client identified by address and Proxy-Authorization, held.
	routeProxyPort route = iota
	// routeTunnel is a request inside a CONNECT or SOCKS5 tunnel: its
	// client and destination settled when the tunnel was opened, held.
	routeTunnel
	// routeTransparent is a request inside a transparent connection: its
	// client identified by address, its destination checked (its name
	// must resolve to where the connection goes), held.
	routeTransparent
	// routeIntercept is the opening of an intercepted tunnel (a CONNECT,
	// a SOCKS5 CONNECT): client and destination checked, each request in
	// it judged on its own.
	routeIntercept
	// routeBlind is the opening of a blind tunnel (a CONNECT or SOCKS5
	// CONNECT to mitm.skip_hosts, a transparent TLS connection not
	// intercepted): only the host is judged, the port by
	// egress.tunnel_ports too.
	routeBlind
	// routeExplain is /explain and check: the client as the asker names
	// it (its credentials taken as valid), nothing held.
	routeExplain
	// routeExplainFetch is /explain?fetch=1 and check -fetch: held for
	// its slot, the URL then fetched.
	routeExplainFetch
	// routeOwnFetch is a request of robotsgate's own (an RSL licence
	// document): its client fixed, held.
	routeOwnFetch
)

// holds reports whether requests of r wait for their pacing slot: they
// are sent.
func (r route) holds() bool {
	switch r {
	case routeProxyPort, routeTunnel, routeTransparent, routeExplainFetch, routeOwnFetch:
		return true
	}
	return false
}

// admission is what is known of a request when it is judged.
type admission struct {
	route     route
	origin    origin.Origin
	target    string // the request-target in origin form; "/" for a tunnel's opening
	method    string
	userAgent string
	// clientAddr is the client's address (ip:port), for the log.
	clientAddr string
	// client is who is asking when already known (inside a tunnel: from
	// its opening; /explain and check without a client named: the
	// default one; robotsgate's own fetches); nil: identify the client
	// (by its address and Proxy-Authorization, or as /explain and check
	// name it: from remote, authenticated as asUser).
	client    *policy.Client
	remote    netip.Addr
	proxyAuth string
	asUser    string
	// purposes, when not nil, replace the identified client's.
	purposes []string
	// dest, when valid, is the address a transparent client connected to:
	// the origin's name must resolve to it (and its port be the same).
	dest netip.AddrPort
	// destChecked: the destination of a transparent request is the one an
	// earlier request on its connection was checked for.
	destChecked bool
	// licenseToken: the request carries its own RSL licence token
	// (Authorization: License …).
	licenseToken bool
}

// admitted is the outcome of admission: the policy's decision, or a
// refusal made before the policy could decide (refused).
type admitted struct {
	d       policy.Decision
	decided bool
	// refused is the refusal made before or instead of a decision: the
	// client (identified, authenticated, its credentials limited), the
	// audit log, the destination (egress guard, port rules, its name, a
	// transparent request's address), or the client leaving.
	refused *refusal.Refusal
	// permit is the pacing permit of a held request; release it when the
	// request is done.
	permit pacing.Permit
}

// refusal is the refusal to answer with, nil when the request may go on.
func (a *admitted) refusal(s *Server) *refusal.Refusal {
	switch {
	case a.refused != nil:
		return a.refused
	case a.d.Refused():
		return s.decisionRefusal(&a.d)
	}
	return nil
}

// checkResolvesTo refuses an origin whose name does not resolve to dest
// (an IP literal must be dest), or whose port is not dest's; nothing to
// check when dest is invalid (not a transparent request). The name is
// resolved as the egress guard resolves it.
func (s *Server) checkResolvesTo(ctx context.Context, o origin.Origin, dest netip.AddrPort) *refusal.Refusal {
	if !dest.IsValid() {
		return nil
	}
	if o.Port != dest.Port() {
		return refusal.HostMismatch(o, dest)
	}
	ips, err := s.settings().guard.Lookup(ctx, o.Host)
	if err != nil {
		return s.egressRefusal(o.Host, fmt.Errorf("resolve %s: %w", o.Host, err))
	}
	for _, ip := range ips {
		if ip.Unmap() == dest.Addr().Unmap() {
			return nil
		}
	}
	return refusal.HostMismatch(o, dest)
}

// admit judges one request (see above). rec is its record, nil for the
// requests that are not audited as they are judged (/explain and check,
// robotsgate's own).
func (s *Server) admit(ctx context.Context, st *settings, a admission, rec *record) (out admitted) {
	if st.cfg.Log.AuditOnError == config.AuditRefuse {
		if err := s.evidence.AuditFailing(); err != nil {
			return admitted{refused: refusal.AuditUnavailable(err)}
		}
	}
	client, refused := s.identifyClient(st, &a)
	if refused != nil {
		return admitted{refused: refused}
	}
	if a.purposes != nil {
		client.Purposes = a.purposes
	}
	if len(client.Purposes) > 0 { // its robots.txt's RSL licences are read
		ctx = withLicenceBudget(ctx, st)
	}
	if a.route != routeTunnel && !a.destChecked {
		if err := s.checkDestination(ctx, a.origin, a.route == routeBlind); err != nil {
			return admitted{refused: s.egressRefusal(a.origin.Host, err)}
		}
		if r := s.checkResolvesTo(ctx, a.origin, a.dest); r != nil {
			return admitted{refused: r}
		}
	}
	req := policy.Request{Origin: a.origin, Target: a.target, UserAgent: a.userAgent, Client: client, LicenseToken: a.licenseToken, At: a.dest}
	if g := s.coldGates.Gate(a.remote, st.cfg.Robots.ColdFetchesPerClient, st.cfg.Pacing.MaxWait.Duration()); g != nil {
		ctx = resolver.WithColdGate(ctx, g)
	}
	var err error
	switch a.route {
	case routeIntercept:
		out.d = policy.Decision{Request: req, Note: audit.NoteTunnelIntercepted}
	case routeBlind:
		out.d, err = st.engine.DecideHost(ctx, req)
	default:
		out.d, err = st.engine.Decide(ctx, req)
	}
	if err != nil {
		return admitted{refused: refusal.ClientLeft("while robots.txt was fetched", err)}
	}
	if a.route.holds() && out.d.Verdict == policy.Allow {
		if out.permit, err = s.pace(ctx, st, &out.d); err != nil {
			return admitted{refused: refusal.ClientLeft("while the request was held", err)}
		}
	}
	out.decided = true
	if rec != nil {
		s.logDecision(ctx, &a, &out.d)
		rec.decide(&out.d, out.permit)
	}
	return out
}

// identifyClient is the client of an admission: a.client when known,
// else identified by its address and credentials (refused when it may
// not use the proxy). A SOCKS5 client is identified by it when it
// authenticates, before it names its destination.
//
// Credentials that fail (a wrong password, an unknown user) count against
// their address: beyond auth.failure_limit in a minute, its attempts are
// refused (auth-limited) without being checked.
func (s *Server) identifyClient(st *settings, a *admission) (policy.Client, *refusal.Refusal) {
	if a.client != nil {
		return *a.client, nil
	}
	if a.route == routeExplain || a.route == routeExplainFetch {
		client, err := st.engine.IdentifyAs(a.remote, a.asUser)
		if err != nil {
			return client, refusal.Identify(st.engine.Realm(), err, true)
		}
		return client, nil
	}
	now := time.Now()
	if a.proxyAuth != "" {
		if wait, limited := s.authFails.Limited(a.remote, st.cfg.Auth.FailureLimit, now); limited {
			return policy.Client{}, refusal.AuthLimited(wait)
		}
	}
	client, err := st.engine.Identify(a.remote, a.proxyAuth)
	if err != nil {
		if a.proxyAuth != "" && errors.Is(err, policy.ErrAuthRequired) {
			s.authFails.Failed(a.remote, now)
			s.metrics.AuthFailures.Inc()
		}
		return client, refusal.Identify(st.engine.Realm(), err, false)
	}
	return client, nil
}
