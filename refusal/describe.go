package refusal

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// A policy decision that refuses a request is described here, once: the
// refusal the client gets (its message, its status, the rule, the
// robots.txt, the signal or licence it rests on), which the monitor
// header, /explain and check show too.

// Explanation is the body of a refusal: what the client is told, in
// JSON or in plain text, and /explain shows.
type Explanation struct {
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
func (e *Explanation) licence(d *policy.Decision) bool {
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

// Describe describes d, a policy decision that refuses a request (or
// would, in monitor mode), under pacing.max_wait maxWait.
func Describe(d *policy.Decision, maxWait time.Duration) *Refusal {
	proxyError := "http_request_denied"
	e := Explanation{
		Decision:  d.Verdict.String(),
		URL:       d.Request.Origin.URL(d.Request.Target),
		UserAgent: d.Request.UserAgent,
		Group:     d.Group(),
		Status:    decisionStatus[d.Verdict.String()],
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
		e.Message = "robots.txt could not be fetched (" + unreachableReason(d) + "): every request to this origin is refused until it can be."
		e.RetryAfter = Seconds(d.RetryAfter)
		if d.Robots != nil {
			e.RobotsError, proxyError = d.Robots.Cause(), robotsProxyError(d.Robots.Cause())
			if hint := CauseHint(e.RobotsError, d.Robots.Err()); hint != "" {
				e.Message += " Operator: " + hint + "."
			}
		}
	case policy.UsageDenied, policy.LicenseRequired:
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
		e.Message = d.Note + "."
		e.RetryAfter = Seconds(d.RetryAfter)
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
		if hint := CauseHint(e.TDMRepError, tdmErr(d)); hint != "" {
			e.Message += " Operator: " + hint + "."
		}
		proxyError = robotsProxyError(e.TDMRepError)
	case policy.TrapDenied:
		e.Message = "crawler-trap guard: " + d.Note + "."
	case policy.TrapBudget:
		e.Status = http.StatusTooManyRequests // the variant of trap-denied (audit.Decisions)
		e.Message = "crawler-trap guard: " + d.Note + "."
		e.RetryAfter = Seconds(d.RetryAfter)
	case policy.RateLimited:
		e.RetryAfter = Seconds(d.RetryAfter)
		e.Message = rateLimitMessage(d, e.RetryAfter, maxWait)
	case policy.OriginPaused:
		e.RetryAfter = Seconds(pauseLeft(d, time.Now()))
		e.Message = fmt.Sprintf("The origin asked to slow down: %s; retry after %d s.", d.Note, e.RetryAfter)
	case policy.OutsideVisitTime:
		e.RetryAfter = Seconds(d.RetryAfter)
		e.Message = fmt.Sprintf("%s; the next window opens in %d s.", upperFirst(d.Note), e.RetryAfter)
	case policy.PacingDown, policy.FetchLimited:
		e.Message = d.Note + "."
		e.RetryAfter = Seconds(d.RetryAfter)
	}
	return &Refusal{body: e, proxyError: proxyError}
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
func (e *Explanation) tdmRep(d *policy.Decision) {
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
func rateLimitMessage(d *policy.Decision, retryAfter int, maxWait time.Duration) string {
	switch d.Limit {
	case pacing.ReasonOverMaxDelay:
		return fmt.Sprintf("robots.txt asks for %v between requests to this origin, more than pacing.max_delay allows (pacing.over_max_delay: refuse).", d.Asked)
	case pacing.ReasonConcurrency:
		return fmt.Sprintf("Too many requests to this origin are in flight (pacing.max_concurrency); retry after %d s.", retryAfter)
	}
	return fmt.Sprintf("robots.txt asks for %v between requests to this origin and the next free slot is further away than pacing.max_wait (%v); retry after %d s.",
		d.Interval, maxWait, retryAfter)
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

// tdmErr is why the decision's tdmrep.json could not be fetched, if it
// could not.
func tdmErr(d *policy.Decision) error {
	if d.TDMRep == nil {
		return nil
	}
	return d.TDMRep.Err
}
