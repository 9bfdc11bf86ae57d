package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/robotsgate/robotsgate/doccache"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/limits"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// A site names its RSL licences by URL, and a URL may be on another site:
// a page naming many licence URLs on a third site would make robotsgate
// send that site a request for each, unbidden (a reflector). So a licence
// document is fetched as robotsgate's own request to its origin, through
// the one admission path: the egress guard, the origin's robots.txt
// judged for robotsgate's agent (robots.fetch_user_agent), its Crawl-delay
// and its pauses (held at most pacing.max_wait), like any request. A
// licence robotsgate may not fetch is a licence it cannot read: unknown,
// usage.on_unknown. Two caps bound what is left: the uncached licences one
// response (or one robots.txt) may make robotsgate fetch
// (usage.license_fetches_per_response), and the licences fetched from one
// origin in any minute (usage.license_fetches_per_origin).

// licenceFetcher names robotsgate's own licence fetches as the client of
// their decisions.
const licenceFetcher = "robotsgate (RSL licence fetch)"

// licenceFetches counts licence fetches per origin, and what was decided.
type licenceFetches struct {
	perOrigin limits.OriginWindow // usage.license_fetches_per_origin

	fetched, refused, originCap, responseCap atomic.Uint64
}

// registerLicenceMetrics counts the licence fetches by outcome.
func (s *Server) registerLicenceMetrics() {
	for outcome, n := range map[string]*atomic.Uint64{
		"fetched": &s.licences.fetched, "refused": &s.licences.refused,
		"origin_cap": &s.licences.originCap, "response_cap": &s.licences.responseCap,
	} {
		s.metrics.LabeledCounterFunc("robotsgate_license_fetches_total",
			"RSL licence documents fetched, or not fetched by robotsgate's own rules: refused (robots.txt, egress guard, pacing), over usage.license_fetches_per_origin, over usage.license_fetches_per_response.",
			"outcome", outcome, func() float64 { return float64(n.Load()) })
	}
}

// admitLicenceFetch is the RSL cache's Admit: the licence document at loc
// is fetched only within usage.license_fetches_per_origin and as the one
// admission path allows a GET of it by robotsgate's own agent; done gives
// the answer to the governor and ends the request's pacing permit.
func (s *Server) admitLicenceFetch(ctx context.Context, loc doccache.Location) (func(*resolver.FileAnswer), error) {
	st := s.settings()
	limit := st.cfg.Usage.LicenseFetchesPerOrigin
	give, ok := s.licences.perOrigin.Take(loc.Origin, limit, time.Now())
	if !ok {
		s.licences.originCap.Add(1)
		err := fmt.Errorf("%d licence documents were fetched from %s in the last minute (usage.license_fetches_per_origin)", limit, loc.Origin)
		s.log.Info("RSL licence not fetched", "url", loc.URL, "why", err.Error())
		return nil, err
	}
	client := policy.Client{Name: licenceFetcher, Mode: policy.Enforce, OwnFetch: true}
	out := s.admit(ctx, st, admission{route: routeOwnFetch, origin: loc.Origin, target: loc.Target, method: http.MethodGet,
		userAgent: st.cfg.Robots.FetchUserAgent, client: &client}, nil)
	if err := licenceRefusal(&out, loc.Origin); err != nil {
		give()
		out.permit.Release()
		s.licences.refused.Add(1)
		s.log.Info("RSL licence not fetched", "url", loc.URL, "why", err.Error())
		return nil, err
	}
	s.licences.fetched.Add(1)
	return func(a *resolver.FileAnswer) {
		defer out.permit.Release()
		answer := pacing.Answer{Status: a.HTTPStatus, At: time.Now()}
		if a.Header != nil {
			answer.RetryAfter, answer.Date = a.Header.Get("Retry-After"), a.Header.Get("Date")
		}
		if a.HTTPStatus == 0 {
			switch egress.Cause(a.Err) {
			case egress.CauseRefused, egress.CauseTimeout, egress.CauseUnreachable:
				answer = pacing.Answer{ConnectionError: true, At: answer.At}
			default:
				return // no answer, nor one the governor counts
			}
		}
		st.engine.ObserveAnswer(ctx, &out.d, answer)
		out.permit.Answered()
	}, nil
}

// licenceRefusal says why the admission of a licence fetch refused it,
// nil when it did not.
func licenceRefusal(out *admitted, o origin.Origin) error {
	switch {
	case out.refused != nil:
		return fmt.Errorf("robotsgate's own request for it is refused: %w", out.refused)
	case !out.d.Refused():
		return nil
	}
	d := &out.d
	if d.Verdict == policy.Disallow && d.Rule.Matched {
		return fmt.Errorf("the robots.txt of %s disallows it to robotsgate's own agent %s: %s (line %d)",
			o, d.Request.UserAgent, d.Rule.Rule, d.Rule.Rule.Line)
	}
	why := d.Note
	if why == "" && d.Robots != nil {
		why = "its robots.txt is " + d.Robots.Status.String()
		if c := d.Robots.Cause(); c != "" {
			why += " (" + c + ")"
		}
	}
	return fmt.Errorf("robotsgate's own request for it to %s is refused (%s): %s", o, d.Verdict, why)
}

// licenceBudgetKey is the context key of a request's licenceBudget.
type licenceBudgetKey struct{}

// licenceBudget is what is left of usage.license_fetches_per_response
// for one request or response.
type licenceBudget struct{ left atomic.Int64 }

// withLicenceBudget gives ctx a budget of uncached licence fetches
// (usage.license_fetches_per_response), unless it has one.
func withLicenceBudget(ctx context.Context, st *settings) context.Context {
	if _, ok := ctx.Value(licenceBudgetKey{}).(*licenceBudget); ok {
		return ctx
	}
	b := &licenceBudget{}
	b.left.Store(int64(st.cfg.Usage.LicenseFetchesPerResponse))
	return context.WithValue(ctx, licenceBudgetKey{}, b)
}

// errResponseCap refuses a licence fetch beyond the response's budget.
var errResponseCap = errors.New("the response names more uncached licence documents than robotsgate fetches for one (usage.license_fetches_per_response)")

// licenceMiss is the RSL cache's Miss: a lookup that would fetch takes one
// of its request's budget.
func (s *Server) licenceMiss(ctx context.Context, loc doccache.Location) error {
	b, ok := ctx.Value(licenceBudgetKey{}).(*licenceBudget)
	if !ok || b.left.Add(-1) >= 0 {
		return nil
	}
	s.licences.responseCap.Add(1)
	s.log.Info("RSL licence not fetched", "url", loc.URL, "why", errResponseCap.Error())
	return errResponseCap
}
