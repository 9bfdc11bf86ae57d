// Package refusal is what robotsgate answers in place of the origin: a
// refusal as a value (a refusal of the policy or of admission, an
// upstream failure, a client that left), made where it is decided (the
// proxy's admission, the response judgement, the upstream side), with
// what it rests on, and its rendering for an HTTP client. A policy
// decision that refuses is described here once (Describe): the proxy
// answers with the description, and /explain and check show it.
//
// The proxy renders a refusal at the edge the client came through, by one
// function each: Response for HTTP clients (the proxy port, the requests
// inside tunnels, a refused CONNECT), a SOCKS5 reply for SOCKS5, and a
// transparent connection's opening is closed. The audit record takes the
// decision and status from the value.
package refusal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/tdmrep"
)

// Refusal is an answer robotsgate makes itself instead of the origin's,
// with what it rests on: how the client is told (the body, the status,
// Proxy-Status) and how the operator is (Why).
type Refusal struct {
	body Explanation // the decision, status, message and what it rests on
	// proxyError is the RFC 9209 Proxy-Status error type.
	proxyError string
	// authenticate is the Proxy-Authenticate challenge of a 407.
	authenticate string
	// why says it to the operator (check, /explain, the log): the cause
	// with its addresses, the key that decides; "" when the message says
	// it all. Never sent to a client: it may name internal addresses.
	why string
	// cause is the error a refusal made before a decision stands for (the
	// egress guard's, the client's context's...), nil when none.
	cause error
}

// decisionStatus is the status code of each decision, as audit.Decisions
// lists it: the one mapping from decision to status. A refusal whose
// status is one of the variants audit.Decisions names (a trap's budget,
// 429; a timeout, 504; 405 and 431 among bad requests) says so with
// WithStatus.
var decisionStatus = func() map[string]int {
	m := map[string]int{}
	for _, d := range audit.Decisions() {
		m[d.Name] = d.Status
	}
	return m
}()

// New is a refusal that is only a message, with the decision's
// status.
func New(decision, proxyError, message string) *Refusal {
	return &Refusal{body: Explanation{Decision: decision, Status: decisionStatus[decision], Message: message}, proxyError: proxyError}
}

// WithStatus sets the status of one of the decision's variants.
func (r *Refusal) WithStatus(status int) *Refusal {
	r.body.Status = status
	return r
}

// RetryAfter sets the Retry-After of r, in whole seconds.
func (r *Refusal) RetryAfter(d time.Duration) *Refusal {
	r.body.RetryAfter = Seconds(d)
	return r
}

// Decision is the refusal's decision value ("egress-denied").
func (r *Refusal) Decision() string { return r.body.Decision }

// Status is the status code the client is answered with.
func (r *Refusal) Status() int { return r.body.Status }

// Message is what the client is told.
func (r *Refusal) Message() string { return r.body.Message }

// Why is what the operator is told: the cause in full, and the
// configuration key that decides when there is one.
func (r *Refusal) Why() string {
	if r.why != "" {
		return r.why
	}
	return strings.TrimSuffix(r.body.Message, ".")
}

// Error makes a refusal an error where a refusal stops robotsgate's own
// request (a licence fetch): Why.
func (r *Refusal) Error() string { return r.Why() }

// Unwrap is the cause of a refusal made before a decision, nil when it has
// none: what it says of the network (resolver.Result.Cause) is read from
// it.
func (r *Refusal) Unwrap() error { return r.cause }

// Details is what Proxy-Status's details say: the rule, or the message.
func (r *Refusal) Details() string {
	e := &r.body
	switch {
	case e.Rule != "":
		return fmt.Sprintf("%s: %s (line %d)", e.Decision, e.Rule, e.Line)
	case e.Message != "":
		return e.Decision + ": " + e.Message
	}
	return e.Decision
}

// Response renders r for an HTTP client: the status, X-Robotsgate-Decision,
// an RFC 9209 Proxy-Status, Cache-Control: no-store, and the explanation
// in plain text or, when req asks for it, JSON. It is how every refusal
// reaches an HTTP client, on the proxy port, inside a tunnel and for a
// refused CONNECT.
func (r *Refusal) Response(req *http.Request) *http.Response {
	e := &r.body
	var body []byte
	contentType := "text/plain; charset=utf-8"
	if wantsJSON(req) {
		body, _ = json.Marshal(e)
		body = append(body, '\n')
		contentType = "application/json"
	} else {
		body = e.text()
	}
	h := http.Header{}
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Robotsgate-Decision", e.Decision)
	h.Set("Proxy-Status", fmt.Sprintf("robotsgate; error=%s; details=%s", r.proxyError, strconv.Quote(r.Details())))
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if r.authenticate != "" {
		h.Set("Proxy-Authenticate", r.authenticate)
	}
	return &http.Response{
		StatusCode:    e.Status,
		Status:        fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status)),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

func wantsJSON(req *http.Request) bool {
	return req != nil && strings.Contains(req.Header.Get("Accept"), "application/json")
}

// Write sends r, rendered for req (Response), through a ResponseWriter.
func (r *Refusal) Write(w http.ResponseWriter, req *http.Request) {
	resp := r.Response(req)
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
	resp.Body.Close()
}

func (e *Explanation) text() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s: %s\n", e.Status, http.StatusText(e.Status), e.Message)
	field := func(name, value string) {
		if value != "" {
			fmt.Fprintf(&b, "%-12s %s\n", name+":", value)
		}
	}
	if e.URL != "" {
		b.WriteString("\n")
	}
	field("URL", e.URL)
	field("User-Agent", e.UserAgent)
	entry := ""
	if e.ClientRule != "" {
		entry = " (clients entry " + e.ClientRule + ")"
	}
	if e.Agent != "" {
		field("Agent", e.Agent+entry)
	}
	if len(e.Purposes) > 0 {
		field("Purposes", strings.Join(e.Purposes, ", ")+entry)
	}
	field("Group", groupText(e.Group))
	if e.Rule != "" {
		field("Rule", fmt.Sprintf("%s (line %d)", e.Rule, e.Line))
	}
	if e.Decoded {
		field("Judged as", e.Canonical+" (the path as the origin decodes it, reserved characters too)")
	} else {
		field("Judged as", e.Canonical)
	}
	field("robots.txt", e.RobotsURL)
	field("Cause", e.RobotsError)
	field("tdmrep.json", e.TDMRepURL)
	if e.TDMEntry != nil {
		field("TDM entry", fmt.Sprintf("[%d] location %s", *e.TDMEntry, tdmrep.Quote(e.TDMLocation)))
	}
	field("TDM policy", e.TDMPolicy)
	field("Cause", e.TDMRepError)
	if e.RetryAfter > 0 {
		field("Retry after", strconv.Itoa(e.RetryAfter)+"s")
	}
	return []byte(b.String())
}

func groupText(g string) string {
	if g == "" {
		return ""
	}
	return "User-agent: " + g
}

// Seconds rounds a duration up to whole seconds, at least 1: a
// Retry-After's.
func Seconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// Refusals made before a decision (the proxy's admission), each where
// its cause is known.

// Identify answers a client that policy.Engine.Identify refused (err):
// 403 client-denied (clients_default: deny, no proxy users), else 407
// with the proxy's challenge for realm. asked: /explain or check named the client (its
// credentials taken as valid), so a 407 means that no clients entry has
// that user.
func Identify(realm string, err error, asked bool) *Refusal {
	if errors.Is(err, policy.ErrClientDenied) {
		r := New(audit.ClientDenied, "http_request_denied",
			"This client may not use this proxy: no clients entry matches it and clients_default is deny.")
		r.why, r.cause = err.Error(), err
		return r
	}
	r := New(audit.AuthRequired, "http_request_denied", "This proxy requires authentication (Proxy-Authorization: Basic).")
	r.authenticate, r.cause = fmt.Sprintf("Basic realm=%q", realm), err
	if asked {
		r.why = "no clients entry with that user applies to that client"
	}
	return r
}

// AuthLimited answers an address whose credentials failed
// auth.failure_limit times in the last minute; it may try again after
// wait.
func AuthLimited(wait time.Duration) *Refusal {
	return New(audit.AuthLimited, "http_request_denied",
		"Too many failed proxy credentials from this address: try again later (auth.failure_limit).").RetryAfter(wait)
}

// auditRetryAfter is the Retry-After of an audit-unavailable refusal: a
// full disk is not freed in a moment.
const auditRetryAfter = 10 * time.Second

// AuditUnavailable answers a request that cannot be recorded because the
// audit log cannot be written (log.audit_on_error: refuse).
func AuditUnavailable(err error) *Refusal {
	r := New(audit.AuditUnavailable, "proxy_internal_error",
		"The audit log cannot be written, and this proxy refuses requests it cannot record (log.audit_on_error: refuse).").RetryAfter(auditRetryAfter)
	r.why, r.cause = "the audit log cannot be written: "+err.Error(), err
	return r
}

// HostMismatch answers a transparent request whose name does not
// resolve to the address its client connected to (Host or SNI forged, or
// the name's addresses changed).
func HostMismatch(o origin.Origin, dest netip.AddrPort) *Refusal {
	return New(audit.HostMismatch, "http_request_denied", "The client connected to "+dest.String()+", and "+o.HostPort()+
		" does not resolve to it: the request would be judged by one site's robots.txt while it reaches another.")
}

// ClientLeft is the answer to a client that went away (err, its
// context's) while its request was judged or held: decision
// client-closed, not a refusal. while says when ("while robots.txt was
// fetched").
func ClientLeft(while string, err error) *Refusal {
	r := New(audit.ClientClosed, "http_request_denied", "The client left "+while+".")
	r.why, r.cause = "the client left "+while+": "+err.Error(), err
	return r
}

// BadRequest answers a request robotsgate cannot judge: malformed, not a
// proxy request.
func BadRequest(message string) *Refusal {
	return New(audit.BadRequest, "http_request_error", message)
}

// EgressDenied answers a destination the egress guard refuses, naming
// the rule (its address's network, or a host list) but not the address.
func EgressDenied(denied *egress.DeniedError) *Refusal {
	msg := "The destination is on a " + denied.Class.String() + " network, which this proxy does not reach (egress guard; egress.allow_networks would allow it)."
	switch denied.Class {
	case egress.DeniedHost:
		msg = "The destination host is refused by egress.deny_hosts."
	case egress.ListedHost:
		msg = fmt.Sprintf("The destination host is on a deny list of egress.deny_hosts_files: %s:%d (%s).",
			denied.Listed.File, denied.Listed.Line, denied.Listed.Entry)
	case egress.NotAllowedHost:
		msg = "The destination host is not in egress.allow_hosts (adding it there would allow it)."
	case egress.SelfAddress:
		msg = "The destination is this proxy itself."
	}
	r := New(audit.EgressDenied, "destination_ip_prohibited", msg)
	r.why, r.cause = denied.Error()+"; "+EgressRule(denied), denied
	return r
}

// Egress answers a destination refused before anything was sent: by the
// egress guard (err an *egress.DeniedError), a port rule (an
// *egress.PortError), or else a name that does not resolve.
func Egress(err error) *Refusal {
	var denied *egress.DeniedError
	var port *egress.PortError
	switch {
	case errors.As(err, &denied):
		return EgressDenied(denied)
	case errors.As(err, &port):
		r := New(audit.EgressDenied, "destination_ip_prohibited", port.Error()+".")
		r.cause = port
		return r
	}
	r := New(audit.UpstreamError, "dns_error", "The destination's name could not be resolved.")
	r.why, r.cause = "the destination's name could not be resolved: "+err.Error(), err
	return r
}
