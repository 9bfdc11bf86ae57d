package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/robots/resolver"
	"github.com/robotsgate/robotsgate/tdmrep"
)

// Every response robotsgate makes itself is built here, so all of them carry
// X-Robotsgate-Decision, an RFC 9209 Proxy-Status and Cache-Control: no-store,
// and explain themselves in plain text or, when asked for, JSON.

// explanation is the body of a refusal.
type explanation struct {
	Decision  string `json:"decision"`
	Status    int    `json:"status"`
	Message   string `json:"message"`
	URL       string `json:"url,omitempty"`
	UserAgent string `json:"user_agent,omitempty"`
	// ClientRule is the clients entry that fixed the agent judged (Agent)
	// or gave the purposes judged (Purposes), when one did: why the
	// refusal names another agent than the User-Agent, or judges purposes
	// the request does not state.
	ClientRule string   `json:"client_rule,omitempty"`
	Agent      string   `json:"agent,omitempty"`
	Purposes   []string `json:"purposes,omitempty"`
	Group      string   `json:"group,omitempty"`
	Rule       string   `json:"rule,omitempty"`
	Line       int      `json:"line,omitempty"`
	Canonical  string   `json:"canonical_target,omitempty"`
	// Decoded: Canonical is the target decoded as the origin decodes it,
	// reserved characters included (robots.DecodedTarget).
	Decoded    bool   `json:"decoded,omitempty"`
	RobotsURL  string `json:"robots_url,omitempty"`
	RobotsInfo string `json:"robots_status,omitempty"`
	RetryAfter int    `json:"retry_after,omitempty"`
	// RobotsError is why robots.txt could not be fetched (Unreachable).
	RobotsError string `json:"robots_error,omitempty"`
	// TDMRepURL is the tdmrep.json that refused (its entry TDMEntry, with
	// TDMLocation and TDMPolicy) or could not be fetched (TDMRepError).
	TDMRepURL   string `json:"tdmrep_url,omitempty"`
	TDMEntry    *int   `json:"tdm_entry,omitempty"`
	TDMLocation string `json:"tdm_location,omitempty"`
	TDMPolicy   string `json:"tdm_policy,omitempty"`
	TDMRepError string `json:"tdmrep_error,omitempty"`
	// LicenseURL is the RSL licence that refused (LicenseElement the
	// element that did), needs a token from LicenseServer, or could not
	// be read (LicenseError); LicenseSource where the site named it.
	LicenseURL     string `json:"license_url,omitempty"`
	LicenseSource  string `json:"license_source,omitempty"`
	LicenseElement string `json:"license_element,omitempty"`
	LicenseServer  string `json:"license_server,omitempty"`
	LicenseError   string `json:"license_error,omitempty"`
	// LicenseTerm is the licence's term the client does not meet (a
	// payment, a reporting obligation, a user or geo term) when one
	// refused.
	LicenseTerm string `json:"license_term,omitempty"`
}

// licence fills in the RSL licence that refused, if one did; it reports
// whether one did.
func (e *explanation) licence(d *policy.Decision) bool {
	l := d.Licence
	if l == nil {
		return false
	}
	e.LicenseURL, e.LicenseSource, e.LicenseElement = l.URL, l.Source, clip(l.Element())
	if u := l.Verdict.Unmet; u != nil {
		e.LicenseTerm = clip(u.Element)
	} else if d.Verdict == policy.LicenseRequired {
		e.LicenseServer = clip(l.Verdict.Server)
	}
	if l.Unknown {
		e.LicenseError = clip(l.Cause())
	}
	return true
}

// refusal renders a policy decision that refuses the request.
func (s *Server) refusal(req *http.Request, d *policy.Decision) *http.Response {
	proxyError := "http_request_denied"
	e := explanation{
		Decision:  d.Verdict.String(),
		URL:       d.Request.Origin.URL(d.Request.Target),
		UserAgent: d.Request.UserAgent,
		Group:     d.Group(),
	}
	if c := d.Request.Client; c.Agent != "" || len(c.Purposes) > 0 {
		e.ClientRule, e.Agent, e.Purposes = c.Name, c.Agent, c.Purposes
	}
	if d.Robots != nil {
		e.RobotsURL = d.Robots.URL()
		e.RobotsInfo = d.Robots.Status.String()
	}
	switch d.Verdict {
	case policy.Disallow:
		e.Status = http.StatusForbidden
		e.Message = "robots.txt disallows this request."
		switch {
		case d.Rule.Matched:
			e.Rule, e.Line, e.Canonical, e.Decoded = d.Rule.Rule.String(), d.Rule.Rule.Line, d.Rule.Canonical, d.Rule.Decoded
		case d.Rule.TooCostly:
			e.Message = "robots.txt is too costly to judge for this request-target (" + d.Note + "), so the request is refused."
		default:
			e.Message = "robots.txt disallows every path of this host to this agent (tunnel not intercepted)."
		}
	case policy.Unreachable:
		e.Status = http.StatusServiceUnavailable
		e.Message = "robots.txt could not be fetched (" + unreachableReason(d) + "): every request to this origin is refused until it can be."
		e.RetryAfter = seconds(d.RetryAfter)
		if d.Robots != nil {
			e.RobotsError, proxyError = d.Robots.Cause(), robotsProxyError(d.Robots.Cause())
			if hint := causeHint(e.RobotsError, d.Robots.Err()); hint != "" {
				e.Message += " Operator: " + hint + "."
			}
		}
	case policy.UsageDenied, policy.LicenseRequired:
		e.Status = http.StatusForbidden
		if e.licence(d) {
			e.Message = "The site's RSL licence refuses this client's purpose: " + d.Licence.Explain() + "."
			if d.Verdict == policy.LicenseRequired && d.Licence.Verdict.Unmet == nil {
				e.Message += " (usage.on_license_server: refuse)"
			}
			if d.Response != nil {
				e.Group, e.RobotsURL, e.RobotsInfo = "", "", ""
			}
			break
		}
		if r := d.Response; r != nil { // judged on the response, not on robots.txt
			e.Message = "The origin's response was withheld: " + r.Signal.Explain() + "."
			e.Group, e.RobotsURL, e.RobotsInfo = "", "", ""
			break
		}
		e.Message = "the site's AI-usage preferences refuse this client's purpose: " + d.Note + "."
		e.tdmRep(d)
	case policy.UsageUnknown:
		e.Status = http.StatusServiceUnavailable
		e.Message = d.Note + "."
		e.RetryAfter = seconds(d.RetryAfter)
		if r := d.Response; r != nil && r.Signal.Unscanned { // judged on the response
			e.Message = "The origin's response was withheld: " + r.Signal.Explain() + " (usage.on_unknown: refuse)."
			e.Group, e.RobotsURL, e.RobotsInfo = "", "", ""
			break
		}
		if e.licence(d) {
			e.Message = d.Licence.Explain() + ", which refuses the purpose " + d.Licence.Purpose + " (usage.on_unknown: refuse)."
			proxyError = robotsProxyError(d.Licence.Cause())
			break
		}
		e.tdmRep(d)
		if hint := causeHint(e.TDMRepError, tdmErr(d)); hint != "" {
			e.Message += " Operator: " + hint + "."
		}
		proxyError = robotsProxyError(e.TDMRepError)
	case policy.TrapDenied:
		e.Status = http.StatusForbidden
		e.Message = "crawler-trap guard: " + d.Note + "."
	case policy.TrapBudget:
		e.Status = http.StatusTooManyRequests
		e.Message = "crawler-trap guard: " + d.Note + "."
		e.RetryAfter = seconds(d.RetryAfter)
	case policy.RateLimited:
		e.Status = http.StatusTooManyRequests
		e.RetryAfter = seconds(d.RetryAfter)
		e.Message = s.rateLimitMessage(d, e.RetryAfter)
	case policy.OriginPaused:
		e.Status = http.StatusTooManyRequests
		e.RetryAfter = seconds(pauseLeft(d, time.Now()))
		e.Message = fmt.Sprintf("The origin asked to slow down: %s; retry after %d s.", d.Note, e.RetryAfter)
	case policy.OutsideVisitTime:
		e.Status = http.StatusTooManyRequests
		e.RetryAfter = seconds(d.RetryAfter)
		e.Message = fmt.Sprintf("%s; the next window opens in %d s.", upperFirst(d.Note), e.RetryAfter)
	case policy.PacingDown, policy.FetchLimited:
		e.Status = http.StatusServiceUnavailable
		e.Message = d.Note + "."
		e.RetryAfter = seconds(d.RetryAfter)
	}
	return render(req, &e, proxyError)
}

// wouldRefuseHeader tells a monitored client (clients[].monitor_header)
// what the proxy would have answered its request: the decision, the status
// and the explanation of Proxy-Status's details, as an RFC 9651
// dictionary-like list item ("disallow; status=403; details=\"...\"").
const wouldRefuseHeader = "X-Robotsgate-Would-Refuse"

// wouldRefuse is the X-Robotsgate-Would-Refuse value of a monitored
// decision: what the refusal it stands for says, rendered by the one
// function that renders refusals.
func (s *Server) wouldRefuse(req *http.Request, d *policy.Decision) string {
	plain := req.Clone(req.Context())
	plain.Header = http.Header{} // the text of the refusal, not JSON
	r := s.refusal(plain, d)
	r.Body.Close()
	_, details, _ := strings.Cut(r.Header.Get("Proxy-Status"), "; details=")
	return fmt.Sprintf("%s; status=%d; details=%s", r.Header.Get("X-Robotsgate-Decision"), r.StatusCode, details)
}

// pauseLeft is the Retry-After of a refusal for a paused origin: what is
// left of the pause when the refusal is written, not the whole pause (an
// origin's Retry-After: 120 seen 30 s ago is 90 s away), whatever the
// pacer computed it from. A pause that is over (its probe's answer is
// awaited) keeps the decision's.
func pauseLeft(d *policy.Decision, now time.Time) time.Duration {
	if d.Pause != nil {
		if left := d.Pause.Until.Sub(now); left > 0 {
			return left
		}
	}
	return d.RetryAfter
}

// upperFirst capitalises the first letter of an ASCII sentence.
func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// tdmRep names the tdmrep.json that refused, and its entry.
func (e *explanation) tdmRep(d *policy.Decision) {
	if d.TDMRep == nil {
		return
	}
	e.TDMRepURL = d.TDMRep.URL
	if d.TDMRep.Unknown() {
		e.TDMRepError = d.TDMRep.Cause()
	}
	if entry := d.TDM.Entry; entry != nil && d.TDM.Reserved() {
		index := entry.Index
		e.TDMEntry, e.TDMLocation, e.TDMPolicy = &index, clip(entry.Location), clip(entry.Policy)
	}
}

// clip cuts a site's text to 256 bytes for a refusal's body.
func clip(s string) string {
	if len(s) <= 256 {
		return s
	}
	return strings.ToValidUTF8(s[:256], "") + "…"
}

// rateLimitMessage explains a 429 with the one figure the client can act
// on, the Retry-After in whole seconds (the audit record's note keeps the
// exact wait).
func (s *Server) rateLimitMessage(d *policy.Decision, retryAfter int) string {
	switch d.Limit {
	case pacing.ReasonOverMaxDelay:
		return fmt.Sprintf("robots.txt asks for %v between requests to this origin, more than pacing.max_delay allows (pacing.over_max_delay: refuse).", d.Asked)
	case pacing.ReasonConcurrency:
		return fmt.Sprintf("Too many requests to this origin are in flight (pacing.max_concurrency); retry after %d s.", retryAfter)
	}
	return fmt.Sprintf("robots.txt asks for %v between requests to this origin and the next free slot is further away than pacing.max_wait (%v); retry after %d s.",
		d.Interval, s.settings().cfg.Pacing.MaxWait.Duration(), retryAfter)
}

// identifyRefusal answers a client that Identify refused: 403
// client-denied (clients_default: deny, no proxy users), else 407.
func (s *Server) identifyRefusal(req *http.Request, st *settings, err error) *http.Response {
	if errors.Is(err, policy.ErrClientDenied) {
		return plainResponse(req, http.StatusForbidden, audit.ClientDenied, "http_request_denied",
			"This client may not use this proxy: no clients entry matches it and clients_default is deny.")
	}
	return s.authRequired(req, st)
}

// authRequired is the 407 for a request without valid proxy credentials.
func (s *Server) authRequired(req *http.Request, st *settings) *http.Response {
	resp := plainResponse(req, http.StatusProxyAuthRequired, audit.AuthRequired, "http_request_denied",
		"This proxy requires authentication (Proxy-Authorization: Basic).")
	resp.Header.Set("Proxy-Authenticate", fmt.Sprintf("Basic realm=%q", st.engine.Realm()))
	return resp
}

func unreachableReason(d *policy.Decision) string {
	if d.Robots == nil {
		return "no response"
	}
	text := causeText[d.Robots.Cause()]
	if text == "" {
		text = "no response"
	}
	var se *resolver.StatusError
	if errors.As(d.Robots.Err(), &se) {
		text += ", HTTP " + strconv.Itoa(se.Code)
	}
	return text
}

// egressRefusal renders a destination refused before anything was sent.
func (s *Server) egressRefusal(req *http.Request, err error) *http.Response {
	var denied *egress.DeniedError
	var port *egress.PortError
	switch {
	case errors.As(err, &denied):
		return egressDenied(req, denied)
	case errors.As(err, &port):
		return render(req, &explanation{Decision: audit.EgressDenied, Status: http.StatusForbidden, Message: port.Error() + "."}, "destination_ip_prohibited")
	}
	s.log.Info("destination lookup failed", "host", req.Host, "err", err)
	return plainResponse(req, http.StatusBadGateway, audit.UpstreamError, "dns_error", "The destination's name could not be resolved.")
}

func egressDenied(req *http.Request, denied *egress.DeniedError) *http.Response {
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
	return render(req, &explanation{Decision: audit.EgressDenied, Status: http.StatusForbidden, Message: msg}, "destination_ip_prohibited")
}

// plainResponse renders a refusal that is only a message.
func plainResponse(req *http.Request, status int, decision, proxyError, message string) *http.Response {
	return render(req, &explanation{Decision: decision, Status: status, Message: message}, proxyError)
}

// render builds the response for an explanation.
func render(req *http.Request, e *explanation, proxyError string) *http.Response {
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
	h.Set("Proxy-Status", proxyStatus(proxyError, e))
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
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

// proxyStatus formats an RFC 9209 Proxy-Status field value. Its details
// say why: the rule, or the message. Clients that show only a status for
// a refused CONNECT ("tunnel failed: 403") show its headers with -v.
func proxyStatus(errorType string, e *explanation) string {
	details := e.Decision
	switch {
	case e.Rule != "":
		details += fmt.Sprintf(": %s (line %d)", e.Rule, e.Line)
	case e.Message != "":
		details += ": " + e.Message
	}
	return fmt.Sprintf("robotsgate; error=%s; details=%s", errorType, strconv.Quote(details))
}

func (e *explanation) text() []byte {
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

// seconds rounds a duration up to whole seconds, at least 1.
func seconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// writeResponse sends a response built here through a ResponseWriter.
func writeResponse(w http.ResponseWriter, resp *http.Response) {
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
	resp.Body.Close()
}

// tdmErr is why the decision's tdmrep.json could not be fetched, if it
// could not.
func tdmErr(d *policy.Decision) error {
	if d.TDMRep == nil {
		return nil
	}
	return d.TDMRep.Err
}
