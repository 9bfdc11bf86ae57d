package proxy

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/policy"
)

// The politeness governor (pacing.Governor) learns from every answer the
// relay sees: a 429 or 503 pauses the origin (for all its requests, the
// policy engine holding them in Pace), so do 500, 502, 504 and timeouts a
// few in a row, and a response time counts for adaptive pacing. Here the relay's view of an answer becomes a
// pacing.Answer, and a pause is counted, logged and recorded.

// governorParams translates pacing.backoff and pacing.adaptive.
func governorParams(p config.Pacing) (pacing.BackoffParams, pacing.AdaptiveParams) {
	b := pacing.BackoffParams{
		Enabled: p.Backoff.Enabled, Statuses: p.Backoff.Statuses, ConnectionErrors: p.Backoff.ConnectionErrors,
		FailureStatuses: p.Backoff.Failures.Statuses, FailureTimeouts: p.Backoff.Failures.Timeouts, FailuresInARow: p.Backoff.Failures.InARow,
		Initial: p.Backoff.Initial.Duration(), Factor: float64(p.Backoff.Factor), Max: p.Backoff.Max.Duration(),
		RetryAfterMax: p.Backoff.RetryAfterMax.Duration(),
	}
	a := pacing.AdaptiveParams{Factor: float64(p.Adaptive.Factor), Min: p.Adaptive.Min.Duration(), Max: p.Adaptive.Max.Duration()}
	return b, a
}

// newGovernor creates the governor of this process, sharing through
// shared when it is not nil.
func (s *Server) newGovernor(p config.Pacing, shared pacing.Shared) *pacing.Governor {
	b, a := governorParams(p)
	return pacing.NewGovernor(b, a, pacing.GovernorOptions{Shared: shared, OnPause: s.paused})
}

// paused counts and logs a pause an answer seen by this process started
// or lengthened.
func (s *Server) paused(origin string, p pacing.Pause) {
	s.metrics.OriginBackoffs.WithLabelValues(p.Label()).Inc()
	s.log.Info("origin paused: its requests wait", "origin", origin, "cause", p.Cause(),
		"until", p.Until.UTC().Format(time.RFC3339Nano))
}

// timesAnswers reports whether the relay must measure response times (for
// adaptive pacing), which costs a trace per request.
func (s *Server) timesAnswers() bool { return s.governor.Adaptive().Factor > 0 }

// observeAnswer gives the origin's answer to the governor, and notes in
// the request's record the pause it started.
func (s *Server) observeAnswer(resp *http.Response, rec *record) {
	a := pacing.Answer{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After"), Date: resp.Header.Get("Date"), At: time.Now()}
	if sent := rec.up.SentAt.Load(); sent != 0 {
		a.Latency = a.At.Sub(time.Unix(0, sent))
	}
	s.tellGovernor(resp.Request.Context(), rec, a)
	rec.permit.Answered() // after the governor saw it: a probe's answer settles its origin
}

// observeFailure gives the governor an answer that never came: the origin
// refused the connection, did not answer in time, or reset it (not the
// client leaving, not a name that does not resolve, not a refusal of the
// egress guard).
func (s *Server) observeFailure(ctx context.Context, rec *record, err error) {
	if ctx.Err() != nil {
		return
	}
	if a, ok := failureAnswer(err, time.Now()); ok {
		s.tellGovernor(ctx, rec, a)
	}
}

// failureAnswer is the governor's view of an upstream error at at: a
// connection error, a timeout among them (which counts towards
// pacing.backoff.failures); ok is false for errors that say nothing of the
// origin (the egress guard's refusals, DNS, TLS).
func failureAnswer(err error, at time.Time) (pacing.Answer, bool) {
	var denied *egress.DeniedError
	if errors.As(err, &denied) {
		return pacing.Answer{}, false
	}
	switch cause := egress.Cause(err); cause {
	case egress.CauseRefused, egress.CauseTimeout, egress.CauseUnreachable:
		return pacing.Answer{ConnectionError: true, Timeout: cause == egress.CauseTimeout, At: at}, true
	}
	return pacing.Answer{}, false
}

// tellGovernor passes a to the policy engine for the record's decision.
func (s *Server) tellGovernor(ctx context.Context, rec *record, a pacing.Answer) {
	if !rec.decided {
		return
	}
	if p, ok := s.settings().engine.ObserveAnswer(ctx, &rec.d, a); ok {
		rec.up.Pause = &audit.Pause{From: a.At.UTC(), Until: p.Until.UTC(), Status: p.Status, RetryAfter: p.RetryAfter}
	}
}

// backoffHeader says, with the response of a request held for its
// origin's pause, how long and why: "2.931; the origin answered 429 with
// Retry-After: 3 at 10:42:07Z".
func backoffHeader(d *policy.Decision) string {
	return strconv.FormatFloat(d.Paused.Seconds(), 'f', 3, 64) + "; " + d.Pause.Cause()
}

// backoffText is the audit record's backoff: the pause's cause and end.
func backoffText(p *pacing.Pause) string {
	return p.Cause() + ", paused until " + p.Until.UTC().Format("15:04:05.000Z")
}

// holdForPause is the upstream's last look before it sends a request: an
// origin paused since the request was let go (another request's 429) keeps
// it, refused as origin-backoff through the relay's error handler.
func (s *Server) holdForPause(ctx context.Context) error {
	rec := recordOf(ctx)
	if rec == nil || !rec.decided || !s.settings().engine.Repause(&rec.d) {
		return nil
	}
	return &usageRefusedError{d: rec.d}
}
