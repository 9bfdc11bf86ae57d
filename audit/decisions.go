package audit

// The decision values: of X-Robotsgate-Decision, of the audit record's
// decision field and of the requests metric's decision label. The policy
// engine's verdicts come first, then the decisions the proxy makes itself.
const (
	Allow             = "allow"              // forwarded
	Disallow          = "disallow"           // robots.txt forbids the path for the agent (403)
	Unreachable       = "unreachable"        // robots.txt could not be fetched: everything refused (503)
	UsageDenied       = "usage-denied"       // an AI-usage signal refuses the client's purpose (403)
	UsageUnknown      = "usage-unknown"      // tdmrep.json could not be fetched for a TDM purpose (503)
	TrapDenied        = "trap-denied"        // the crawler-trap guard (403; 429 when the page budget is spent)
	RateLimited       = "rate-limited"       // the pacing slot lies beyond pacing.max_wait (429)
	OriginBackoff     = "origin-backoff"     // the origin asked to slow down (429, 503) and its pause lasts beyond pacing.max_wait (429)
	OutsideVisitTime  = "outside-visit-time" // robots.txt's Visit-time windows do not include now (429)
	PacingUnavailable = "pacing-unavailable" // the shared pacing store cannot answer (503)
	EgressDenied      = "egress-denied"      // the egress guard refused the destination (403)
	AuthRequired      = "auth-required"      // proxy credentials missing or wrong (407)
	AuthLimited       = "auth-limited"       // too many failed credentials from the address (429)
	ClientDenied      = "client-denied"      // no clients entry matches and clients_default is deny (403)
	Misdirected       = "misdirected"        // a request in a tunnel for another origin (421)
	HostMismatch      = "host-mismatch"      // a transparent request's Host or SNI does not resolve to the address connected to (409)
	BadRequest        = "bad-request"        // malformed or ambiguous request, not a proxy request (400)
	ClientTimeout     = "client-timeout"     // the client stopped sending its request body (408)
	UpstreamError     = "upstream-error"     // the origin could not be reached or failed (502, 504)
	UnknownProtocol   = "unknown-protocol"   // the client spoke neither TLS nor HTTP in a tunnel (a CONNECT)
	ClientClosed      = "client-closed"      // the client left while its request was judged or held (499)
	ClientTLSFailed   = "client-tls-failed"  // the client failed the intercepted TLS handshake (a CONNECT)
	AuditUnavailable  = "audit-unavailable"  // the audit log cannot be written and log.audit_on_error is refuse (503)
	FetchLimited      = "fetch-limited"      // the client has too many lookups of uncached origins in flight (503)
	LicenseRequired   = "license-required"   // an RSL licence grants the client's purpose only with a licence server's token (403)
)

// How a request arrived (the audit record's via).
const (
	ViaProxy       = "proxy"       // on the proxy port: absolute-form, or the CONNECT itself
	ViaTunnel      = "tunnel"      // inside a tunnel the client opened with CONNECT
	ViaTransparent = "transparent" // redirected to a transparent listener by the kernel
	ViaSOCKS       = "socks"       // through the SOCKS5 listener
	ViaAdmin       = "admin"       // an operator's refresh through the admin listener
)

// StatusClientClosed is what the audit records for a request whose client
// left before it was answered (nginx's 499); nobody receives it.
const StatusClientClosed = 499

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

// Decisions returns every decision value robotsgate records, in a fixed
// order. docs/decisions.md's table is tested against it.
func Decisions() []DecisionInfo {
	return []DecisionInfo{
		{Allow, 0, false},
		{Disallow, 403, true},
		{Unreachable, 503, true},
		{UsageDenied, 403, true},
		{UsageUnknown, 503, true},
		{LicenseRequired, 403, true},
		{TrapDenied, 403, true}, // 429 when the page budget is spent
		{RateLimited, 429, true},
		{OriginBackoff, 429, true},
		{OutsideVisitTime, 429, true},
		{PacingUnavailable, 503, true},
		{FetchLimited, 503, true},
		{EgressDenied, 403, true},
		{AuthRequired, 407, true},
		{AuthLimited, 429, true},
		{ClientDenied, 403, true},
		{Misdirected, 421, true},
		{HostMismatch, 409, true},
		{BadRequest, 400, true}, // 405, 417, 431 for some
		{ClientTimeout, 408, true},
		{AuditUnavailable, 503, true},
		{UpstreamError, 502, false}, // 504 for a timeout
		{UnknownProtocol, 0, true},
		{ClientClosed, StatusClientClosed, false},
		{ClientTLSFailed, 0, false},
	}
}

// The notes of a CONNECT's record whose tunnel was opened and its requests
// judged one by one (each a record of its own): intercepted TLS, or plain
// HTTP inside (followed by the origin it is judged as). The report counts
// such tunnels apart from requests by them.
const (
	NoteTunnelIntercepted = "tunnel intercepted: each request in it is judged"
	NotePlainHTTPTunnel   = "plain HTTP inside the tunnel: each request in it is judged as "
)
