package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/refusal"
	"github.com/robotsgate/robotsgate/upstream"
)

// Explained is the decision on a URL as /explain and check show it: the
// proxy's decision on a request for it (admit, as for a request through
// the proxy), with what it rests on.
type Explained struct {
	// Decision is the decision when the policy made one (Refused nil).
	Decision policy.Decision
	// Refused is the refusal made before a decision: the client (not
	// allowed, not known), the egress rules (the destination's address,
	// host or port), its name not resolving, or time running out (the
	// asker left).
	Refused *refusal.Refusal
	// NextSlot is how long a request judged alike would wait for its
	// pacing slot now (not with Fetch: the fetch itself was held).
	NextSlot time.Duration
	// Pause is the origin's pause in force, which would hold (or refuse,
	// beyond MaxWait) a request judged alike now; nil when none. With
	// Fetch it is the one that held or refused the fetch (Decision.Pause).
	Pause *pacing.Pause
	// AwaitingProbe reports that Pause is over and a request judged alike
	// now waits for the answer to the first one sent after it (or is that
	// one).
	AwaitingProbe bool
	MaxWait       time.Duration
	// ResponseTime is the origin's recent response time, which adaptive
	// pacing multiplies (Decision.Adaptive); 0 when none is known.
	ResponseTime time.Duration
	// Signals are every AI-usage signal found for the URL, with the
	// purposes each refuses: the robots.txt lines and the tdmrep.json
	// entry that apply (the file is read for any client) and, when
	// fetched, the response's header fields and HTML head, read as the
	// relay reads them.
	Signals []audit.UsageSignal
	// Fetched: the URL was requested; FetchErr is why it was not, or why
	// its response could not be read.
	Fetched  bool
	FetchErr error
}

// Refusal is the refusal the proxy answers a request judged alike with
// (for a monitored client, the one it would answer with): Refused, or the
// decision's; nil when it is allowed. /explain and check show it as the
// proxy's refusal says it.
func (x *Explained) Refusal() *refusal.Refusal {
	switch {
	case x.Refused != nil:
		return x.Refused
	case x.Decision.Verdict != policy.Allow:
		return refusal.Describe(&x.Decision, x.MaxWait)
	}
	return nil
}

// Asker is who /explain and check judge a URL for.
type Asker struct {
	// UserAgent is the User-Agent header the request would carry.
	UserAgent string
	// Addr and User identify the client as a request from Addr,
	// authenticated as User, would be identified by the clients entries
	// (its credentials taken as valid); both zero: the default client,
	// enforced, without purposes.
	Addr netip.Addr
	User string
	// Purposes, when not nil, replace the client's purposes.
	Purposes []string
	// By names the asker in the audit record of a fetch (its address, or
	// "check").
	By string
}

// Judge decides rawURL as a request for it through the proxy, from the
// asker's client, would be decided, and with fetch also requests it (GET,
// held for its pacing slot like a proxied request) and judges its response
// as the relay does: a refusing signal makes the decision usage-denied, as
// the proxy would withhold the response. The fetch is written to the audit
// log (note "fetched to explain"), since the origin was contacted. The
// error is an invalid URL.
func (s *Server) Judge(ctx context.Context, rawURL string, asker Asker, fetch bool) (Explained, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return Explained{}, fmt.Errorf("explain %s: %w", rawURL, err)
	}
	o, err := origin.FromURL(u)
	if err != nil {
		return Explained{}, fmt.Errorf("explain %s: %w", rawURL, err)
	}
	target := u.RequestURI()
	if u.Opaque == "" && u.RawPath == "" && u.Path == "" && u.RawQuery == "" {
		target = "/"
	}
	st := s.settings()
	ctx = withLicenceBudget(ctx, st) // for the licences of robots.txt and of the response, as the proxy's
	start := time.Now()
	a := admission{route: routeExplain, origin: o, target: target, method: http.MethodGet, userAgent: asker.UserAgent,
		clientAddr: asker.By, purposes: asker.Purposes, remote: asker.Addr, asUser: asker.User}
	if fetch {
		a.route = routeExplainFetch
	}
	if !asker.Addr.IsValid() && asker.User == "" {
		a.client = &policy.Client{} // the default client
	}
	adm := s.admit(ctx, st, a, nil)
	if adm.refused != nil {
		return Explained{Refused: adm.refused}, nil
	}
	defer adm.permit.Release()
	e := Explained{Decision: adm.d}
	d := &e.Decision
	if err := st.engine.ConsultTDM(ctx, d); err != nil {
		return Explained{Refused: refusal.ClientLeft("while tdmrep.json was fetched", err)}, nil
	}
	if err := st.engine.ConsultLicenses(ctx, d); err != nil {
		return Explained{Refused: refusal.ClientLeft("while an RSL licence was fetched", err)}, nil
	}
	e.Signals = d.ExplainSignals()
	e.MaxWait, e.Pause = st.cfg.Pacing.MaxWait.Duration(), d.Pause
	e.ResponseTime, _ = s.governor.ResponseTime(d.Request.Origin.String())
	switch {
	case !fetch:
		e.NextSlot, _ = st.engine.NextSlot(ctx, d)
		e.Pause, e.AwaitingProbe = st.engine.PauseOf(d)
	case d.Verdict != policy.Allow:
		e.FetchErr = fmt.Errorf("the response was not fetched: the request would be refused (%s)", d.Verdict)
	default:
		e.Fetched = true
		e.FetchErr = s.fetchToExplain(ctx, st, &e, adm.permit, start, asker.By)
	}
	return e, nil
}

// fetchToExplain requests the explained URL (its slot already held) and
// judges its response as the relay does, reading its body no further than
// the head.
func (s *Server) fetchToExplain(ctx context.Context, st *settings, e *Explained, permit pacing.Permit, start time.Time, by string) (err error) {
	d := &e.Decision
	u := d.Request.Origin.URL(d.Request.Target)
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: permit.Sent}),
		http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", u, err)
	}
	req.Header.Set("User-Agent", d.Request.UserAgent) // "" sends none, as a client without one
	upstream.Identify(req, st.cfg.Identify)
	s.log.Info("fetching a page to explain its AI-usage signals", "url", u, "user_agent", d.Request.UserAgent)
	var notes []string
	status := 0
	sent := time.Now()
	defer func() { s.auditExplainFetch(e, start, sent, status, notes, err, by) }() // the origin may have been contacted
	// Signed as the client's request would be (Web Bot Auth).
	if signer := st.signers.ForClient(d.Request.Client.Entry); signer != nil {
		req = upstream.SignedCopy(req, signer)
	}
	resp, err := s.upstream.Transport().RoundTrip(req)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", u, err)
	}
	defer resp.Body.Close()
	status = resp.StatusCode
	st.engine.ObserveAnswer(ctx, d, pacing.Answer{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After"),
		Date: resp.Header.Get("Date"), At: time.Now()})
	permit.Answered()
	j, err := judgeResponseSignals(ctx, d, resp)
	if err != nil {
		return fmt.Errorf("fetch %s: the RSL licence it names: %w", u, err)
	}
	e.Signals = append(e.Signals, j.Signals...)
	d.ApplyResponse(j, resp.StatusCode)
	return nil
}

// auditExplainFetch records a fetch made to explain a URL: the origin was
// contacted, though no client received the response (status 0).
func (s *Server) auditExplainFetch(e *Explained, start, sent time.Time, status int, notes []string, err error, by string) {
	rec := newAuditRecord(start, by, http.MethodGet, &e.Decision)
	rec.Usage = e.Signals // whatever the purposes: what was explained
	rec.WaitMS = float64(e.Decision.Waited.Microseconds()) / 1000
	rec.SentMS = float64(sent.Sub(start).Microseconds()) / 1000
	rec.UpstreamStatus = status
	for _, n := range notes {
		rec.AddNote(n)
	}
	note := "fetched to explain its AI-usage signals (headers and HTML head read, the body not relayed)"
	if err != nil {
		note += ": " + err.Error()
	}
	rec.AddNote(note)
	rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	s.evidence.Write(&rec)
}
