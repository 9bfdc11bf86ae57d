package proxy

import (
	"time"

	"github.com/robotsgate/robotsgate/refusal"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// A robots.txt that cannot be fetched refuses every request to its
// origin, so its cause must be plain wherever the operator looks: a class
// (resolver.Result.Cause) in the 503's body and Proxy-Status (package
// refusal), in the audit record (robots_error), and a WARN line when a
// failure streak starts, with the raw error (which clients never see) and
// what to do about it.

// robotsFetched is the resolver's OnFetch: metrics, and the failure log.
func (s *Server) robotsFetched(res *resolver.Result, took time.Duration) {
	outcome := res.Status
	if res.Stale {
		outcome = resolver.Unreachable // an earlier copy stands in for a failed fetch
	}
	s.metrics.RobotsFetches.WithLabelValues(outcome.String()).Inc()
	s.metrics.RobotsFetchSeconds.Observe(took.Seconds())
	if outcome != resolver.Unreachable || res.Failures() != 1 {
		return // once per failure streak
	}
	attrs := []any{"origin", res.Origin().String(), "cause", res.Cause(), "err", res.Err()}
	if hint := refusal.CauseHint(res.Cause(), res.Err()); hint != "" {
		attrs = append(attrs, "hint", hint)
	}
	if res.Stale {
		attrs = append(attrs, "using", "the copy fetched at "+res.FetchedAt().UTC().Format(time.RFC3339))
	}
	s.log.Warn("robots.txt unreachable: requests to this origin are refused until it can be fetched", attrs...)
}
