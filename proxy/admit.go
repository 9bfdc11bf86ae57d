package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// Every way a request reaches robotsgate is decided by admit: an
// absolute-form request on the proxy port, a CONNECT (intercepted, blind or
// refused), a request inside an intercepted tunnel, /explain and check. Each
// tells admit what it knows of the request; admit identifies the client,
// checks the destination, asks the policy engine, holds the request for its
// pacing slot, and logs and records the decision of proxied traffic. One
// function renders the outcome as a response (refusalOf); /explain and
// check render the same outcome as JSON and text.

// admission is what is known of a request when it is judged.
type admission struct {
	origin    origin.Origin
	target    string // the request-target in origin form; "/" for a CONNECT
	method    string
	userAgent string
	// clientAddr is the client's address (ip:port), for the log.
	clientAddr string
	// client is who is asking when already known (inside a tunnel: from
	// its CONNECT; /explain and check: the asker's purposes); nil:
	// identify the client by its address and Proxy-Authorization.
	client    *policy.Client
	remote    netip.Addr
	proxyAuth string
	// as: identify the client as a request from remote authenticated as
	// asUser would be, credentials taken as valid (/explain and check).
	as     bool
	asUser string
	// purposes, when not nil, replace the identified client's.
	purposes []string
	// checked: the destination was checked already (a request inside a
	// tunnel, checked at its CONNECT).
	checked bool
	// dest, when valid, is the address a transparent client connected to:
	// the origin's name must resolve to it (and its port be the same).
	dest netip.AddrPort
	// connect is a CONNECT: intercepted (each request inside is judged on
	// its own), or blind (only the host can be judged).
	connect, intercept bool
	// hold waits for the pacing slot: the request is to be sent.
	hold bool
	// licenseToken: the request carries its own RSL licence token
	// (Authorization: License …).
	licenseToken bool
}

// admitted is the outcome of admission: the policy's decision, or a
// refusal made before the policy could decide (refused).
type admitted struct {
	d       policy.Decision
	decided bool
	// refused is why the request was refused before or instead of a
	// decision: an *identifyError, an egress refusal (*egress.DeniedError,
	// *egress.PortError, or the name's lookup failing), a *mismatchError,
	// or a *clientLeftError.
	refused error
	// permit is the pacing permit of a held request; release it when the
	// request is done.
	permit pacing.Permit
}

// identifyError is a client that Identify refused (policy.ErrClientDenied,
// policy.ErrAuthRequired).
type identifyError struct{ err error }

func (e *identifyError) Error() string { return e.err.Error() }
func (e *identifyError) Unwrap() error { return e.err }

// clientLeftError is a client that went away (err, its context's) while
// its request was judged or held.
type clientLeftError struct {
	while string
	err   error
}

func (e *clientLeftError) Error() string { return "the client left " + e.while + ": " + e.err.Error() }
func (e *clientLeftError) Unwrap() error { return e.err }

// auditError is a request refused because the audit log cannot be written
// (log.audit_on_error: refuse).
type auditError struct{ err error }

func (e *auditError) Error() string { return "the audit log cannot be written: " + e.err.Error() }
func (e *auditError) Unwrap() error { return e.err }

// auditRetryAfter is the Retry-After of an audit-unavailable refusal, in
// seconds: a full disk is not freed in a moment.
const auditRetryAfter = 10

// mismatchError is a transparent request whose name does not resolve to
// the address its client connected to (Host or SNI forged, or the name's
// addresses changed).
type mismatchError struct {
	origin origin.Origin
	dest   netip.AddrPort
}

func (e *mismatchError) Error() string {
	return "The client connected to " + e.dest.String() + ", and " + e.origin.HostPort() + " does not resolve to it"
}

// checkResolvesTo refuses an origin whose name does not resolve to dest
// (an IP literal must be dest), or whose port is not dest's; nothing to
// check when dest is invalid (not a transparent request). The name is
// resolved as the egress guard resolves it.
func (s *Server) checkResolvesTo(ctx context.Context, o origin.Origin, dest netip.AddrPort) error {
	if !dest.IsValid() {
		return nil
	}
	if o.Port != dest.Port() {
		return &mismatchError{o, dest}
	}
	ips, err := s.settings().guard.Lookup(ctx, o.Host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", o.Host, err)
	}
	for _, ip := range ips {
		if ip.Unmap() == dest.Addr().Unmap() {
			return nil
		}
	}
	return &mismatchError{o, dest}
}

// admit judges one request (see above).
func (s *Server) admit(ctx context.Context, st *settings, a admission) (out admitted) {
	if st.cfg.Log.AuditOnError == config.AuditRefuse {
		if err := s.auditLog.Failing(); err != nil {
			return admitted{refused: &auditError{err}}
		}
	}
	client, err := s.identifyClient(st, &a)
	if err != nil {
		return admitted{refused: err}
	}
	if a.purposes != nil {
		client.Purposes = a.purposes
	}
	if len(client.Purposes) > 0 { // its robots.txt's RSL licences are read
		ctx = withLicenceBudget(ctx, st)
	}
	if !a.checked {
		if err := s.checkDestination(ctx, a.origin, a.connect && !a.intercept); err != nil {
			return admitted{refused: err}
		}
		if err := s.checkResolvesTo(ctx, a.origin, a.dest); err != nil {
			return admitted{refused: err}
		}
	}
	req := policy.Request{Origin: a.origin, Target: a.target, UserAgent: a.userAgent, Client: client, LicenseToken: a.licenseToken, At: a.dest}
	if g := s.coldGates.gate(a.remote, st.cfg.Robots.ColdFetchesPerClient, st.cfg.Pacing.MaxWait.Duration()); g != nil {
		ctx = resolver.WithColdGate(ctx, g)
	}
	switch {
	case a.intercept:
		out.d = policy.Decision{Request: req, Note: audit.NoteTunnelIntercepted}
	case a.connect:
		out.d, err = st.engine.DecideHost(ctx, req)
	default:
		out.d, err = st.engine.Decide(ctx, req)
	}
	if err != nil {
		return admitted{refused: &clientLeftError{"while robots.txt was fetched", err}}
	}
	if a.hold && out.d.Verdict == policy.Allow {
		if out.permit, err = s.pace(ctx, st, &out.d); err != nil {
			return admitted{refused: &clientLeftError{"while the request was held", err}}
		}
	}
	out.decided = true
	if slot := auditSlotOf(ctx); slot != nil {
		s.logDecision(ctx, &a, &out.d)
		slot.decide(&out.d, out.permit)
	}
	return out
}

// identifyClient is the client of an admission: a.client when known,
// else identified by its address and credentials (an *identifyError when
// refused). A SOCKS5 client is identified by it when it authenticates,
// before it names its destination.
//
// Credentials that fail (a wrong password, an unknown user) count against
// their address: beyond auth.failure_limit in a minute, its attempts are
// refused (*authLimitedError) without being checked.
func (s *Server) identifyClient(st *settings, a *admission) (policy.Client, error) {
	if a.client != nil {
		return *a.client, nil
	}
	if a.as {
		client, err := st.engine.IdentifyAs(a.remote, a.asUser)
		if err != nil {
			return client, &identifyError{err}
		}
		return client, nil
	}
	now := time.Now()
	if a.proxyAuth != "" {
		if wait, limited := s.authFails.limited(a.remote, st.cfg.Auth.FailureLimit, now); limited {
			return policy.Client{}, &authLimitedError{wait}
		}
	}
	client, err := st.engine.Identify(a.remote, a.proxyAuth)
	if err != nil {
		if a.proxyAuth != "" && errors.Is(err, policy.ErrAuthRequired) {
			s.authFails.failed(a.remote, now)
			s.metrics.AuthFailures.Inc()
		}
		return client, &identifyError{err}
	}
	return client, nil
}

// authLimitedError is an address whose credentials failed auth.failure_limit
// times in the last minute; it may try again after wait.
type authLimitedError struct{ wait time.Duration }

func (e *authLimitedError) Error() string {
	return "too many failed proxy credentials from this address (auth.failure_limit)"
}

// refusalOf renders the outcome of admission as the response to send, or
// nil when the request may go on.
func (s *Server) refusalOf(req *http.Request, st *settings, a *admitted) *http.Response {
	switch {
	case a.refused != nil:
		return s.refusedBefore(req, st, a.refused)
	case a.d.Refused():
		return s.refusal(req, &a.d)
	}
	return nil
}

// refusedBefore renders a refusal made before or instead of a decision.
// (Apart from refusalOf, so that the allowed requests do not pay for the
// errors.As targets.)
func (s *Server) refusedBefore(req *http.Request, st *settings, err error) *http.Response {
	var id *identifyError
	var left *clientLeftError
	var au *auditError
	var limited *authLimitedError
	var mismatch *mismatchError
	switch {
	case errors.As(err, &id):
		return s.identifyRefusal(req, st, id.err)
	case errors.As(err, &left):
		return clientClosed(req, "The client left "+left.while+".")
	case errors.As(err, &limited):
		return render(req, &explanation{Decision: audit.AuthLimited, Status: http.StatusTooManyRequests, RetryAfter: seconds(limited.wait),
			Message: "Too many failed proxy credentials from this address: try again later (auth.failure_limit)."}, "http_request_denied")
	case errors.As(err, &au):
		return render(req, &explanation{Decision: audit.AuditUnavailable, Status: http.StatusServiceUnavailable, RetryAfter: auditRetryAfter,
			Message: "The audit log cannot be written, and this proxy refuses requests it cannot record (log.audit_on_error: refuse)."},
			"proxy_internal_error")
	case errors.As(err, &mismatch):
		return plainResponse(req, http.StatusConflict, audit.HostMismatch, "http_request_denied", mismatch.Error()+
			": the request would be judged by one site's robots.txt while it reaches another.")
	}
	return s.egressRefusal(req, err)
}
