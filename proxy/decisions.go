package proxy

import "github.com/robotsgate/robotsgate/policy"

// The decisions the proxy makes itself, besides the policy engine's
// verdicts (policy.Verdicts): the values of X-Robotsgate-Decision, of the
// audit log's decision field and of the requests metric's decision label.
const (
	decisionBadRequest      = "bad-request"       // malformed or ambiguous request, not a proxy request
	decisionMisdirected     = "misdirected"       // a request in a tunnel for another origin (421)
	decisionEgressDenied    = "egress-denied"     // the egress guard refused the destination
	decisionAuthRequired    = "auth-required"     // proxy credentials missing or wrong (407)
	decisionClientDenied    = "client-denied"     // no clients entry matches and clients_default is deny (403)
	decisionUpstreamError   = "upstream-error"    // the origin could not be reached or failed (502, 504)
	decisionClientTimeout   = "client-timeout"    // the client stopped sending its request body (408)
	decisionClientClosed    = "client-closed"     // the client left while its request was judged or held (499)
	decisionClientTLSFailed = "client-tls-failed" // the client failed the intercepted TLS handshake (a CONNECT)
	decisionUnknownProtocol = "unknown-protocol"  // the client spoke neither TLS nor HTTP in a tunnel (a CONNECT)
)

// DecisionInfo describes one decision value.
type DecisionInfo struct {
	// Name is the value ("disallow").
	Name string
	// Status is the status code sent to the client (0: none, the request
	// is forwarded or the client is gone).
	Status int
	// Refusal reports whether the proxy refused the request itself: not
	// an allowed one, an upstream failure, or what a client did to itself
	// (left while held, failed the TLS handshake).
	Refusal bool
}

// Decisions returns every decision value robotsgate records, the policy's
// and its own, in a fixed order. docs/decisions.md's table is tested against it.
func Decisions() []DecisionInfo {
	return []DecisionInfo{
		{policy.Allow.String(), 0, false},
		{policy.Disallow.String(), 403, true},
		{policy.Unreachable.String(), 503, true},
		{policy.UsageDenied.String(), 403, true},
		{policy.UsageUnknown.String(), 503, true},
		{policy.TrapDenied.String(), 403, true}, // 429 when the page budget is spent
		{policy.RateLimited.String(), 429, true},
		{policy.PacingDown.String(), 503, true},
		{decisionEgressDenied, 403, true},
		{decisionAuthRequired, 407, true},
		{decisionClientDenied, 403, true},
		{decisionMisdirected, 421, true},
		{decisionBadRequest, 400, true}, // 405, 417, 431 for some
		{decisionClientTimeout, 408, true},
		{decisionUpstreamError, 502, false}, // 504 for a timeout
		{decisionUnknownProtocol, 0, true},
		{decisionClientClosed, statusClientClosed, false},
		{decisionClientTLSFailed, 0, false},
	}
}
