package proxy

import (
	"context"
	"fmt"
	"net/http"

	"github.com/robotsgate/robotsgate/headscan"
	"github.com/robotsgate/robotsgate/policy"
)

// The AI-usage signals of an origin's response (policy/response.go) are
// judged in the relay's ModifyResponse, before anything of the response is
// written to the client, and only for a client with purposes: the
// request's record carries them (Decision.ResponsePurposes), and every
// other request pays one length check.
//
// A refusing signal makes ModifyResponse return a *usageRefusedError: the
// relay closes the origin's body unread (its transport then closes the
// connection, or resets the HTTP/2 stream) and its ErrorHandler sends 403
// usage-denied instead. Not one byte of the origin's body reaches the
// client; the audit record keeps the origin's status (upstream_status) and
// says in its note which signal withheld the body.
//
// With usage.scan_html, the head of an HTML page (text/html,
// application/xhtml+xml, or a response with no Content-Type at all) is read
// for its meta and link tags first (package headscan): the relay holds
// back up to htmlmeta.Limit bytes of the body (until </head> or <body>),
// then passes them on ahead of the rest. A client cannot switch the scan
// off: its request asks the origin only for the content codings the scan
// decodes (headscan.RestrictAcceptEncoding: gzip and deflate, identity),
// and a gzip or deflate body is decompressed for the scan only, the
// client still receiving the origin's bytes. A page the scan cannot read — another
// coding the origin sent anyway, a head that does not end within the
// limit, a body that fails — is unscanned: what it says is unknown
// (policy.Head.Unscanned; 503 usage-unknown under usage.on_unknown), never
// let through as if it said nothing.

// usageRefusedError is a response withheld because one of its AI-usage
// signals refuses the client's purpose: the decision, made UsageDenied by
// the response (policy.Decision.ApplyResponse); or a request kept from
// its origin, paused since the request was let go (holdForPause: the
// decision made OriginPaused). The relay's error handler answers with the
// changed decision.
type usageRefusedError struct{ d policy.Decision }

func (e *usageRefusedError) Error() string {
	if e.d.Response == nil { // withheld for another reason than a signal (fetch-limited)
		return e.d.Note
	}
	return withheldNote(e.d.Response, false)
}

// clientLeftError is a client that went away (err, its context's) while
// the response to its request was judged.
type clientLeftError struct {
	while string
	err   error
}

func (e *clientLeftError) Error() string { return "the client left " + e.while + ": " + e.err.Error() }
func (e *clientLeftError) Unwrap() error { return e.err }

// withheldNote is the audit record's note of a response that a signal
// refused.
func withheldNote(r *policy.ResponseRefusal, monitor bool) string {
	if monitor {
		return fmt.Sprintf("the origin's response (%d) would be withheld: %s (monitor mode: delivered)", r.UpstreamStatus, r.Signal.Explain())
	}
	return fmt.Sprintf("the origin's response (%d) was withheld: %s", r.UpstreamStatus, r.Signal.Explain())
}

// judgeResponse judges the AI-usage signals of resp as the record's
// decision says (policy.ResponseJudge); a non-nil error withholds the
// response (usageRefusedError).
func (s *Server) judgeResponse(resp *http.Response, rec *record) error {
	ctx := withLicenceBudget(resp.Request.Context(), s.settings()) // one for this response's licences
	j, err := judgeResponseSignals(ctx, &rec.d, resp)
	if err != nil {
		return &clientLeftError{"while the response's RSL licence was fetched", err}
	}
	rec.signals = j.Signals
	if !j.Refused {
		return nil
	}
	rec.d.ApplyResponse(j, resp.StatusCode)
	d := &rec.d
	if !j.Enforced {
		if d.Request.Client.MonitorHeader {
			resp.Header.Set(wouldRefuseHeader, s.wouldRefuse(d))
		}
		s.log.Info("response would be refused (monitor mode): delivered", "url", d.Request.Origin.URL(d.Request.Target),
			"signal", j.Refusal.String(), "purpose", j.Refusal.Purpose, "client", resp.Request.RemoteAddr, "client_rule", d.Request.Client.Name)
		return nil
	}
	s.log.Info("response refused", "url", d.Request.Origin.URL(d.Request.Target), "signal", j.Refusal.String(), "purpose", j.Refusal.Purpose,
		"upstream_status", resp.StatusCode, "client", resp.Request.RemoteAddr, "client_rule", d.Request.Client.Name)
	return &usageRefusedError{d: *d}
}

// judgeResponseSignals judges the AI-usage signals of resp for the
// request d allowed (policy.ResponseJudge.JudgeResponse), as the relay,
// /explain and check all do, reading its head at most once. The only error
// is ctx's (the client left while a licence was fetched).
func judgeResponseSignals(ctx context.Context, d *policy.Decision, resp *http.Response) (policy.ResponseJudgement, error) {
	return d.ResponseJudge().JudgeResponse(ctx, resp.Header, headscan.Of(resp).Read())
}
