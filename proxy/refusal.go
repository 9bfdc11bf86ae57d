package proxy

import (
	"context"
	"fmt"
	"strconv"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/refusal"
)

// A refusal is a value (package refusal): what robotsgate answers in place
// of the origin, made where it is decided (admit, the response judgement,
// the upstream side) and rendered at the edge the client came through, by
// one function each: refuse for HTTP clients (the proxy port, the requests
// inside tunnels; rejectConnect for a refused CONNECT), refuseSOCKS for
// SOCKS5, and a transparent connection's opening is closed. The audit
// record takes the decision and status from the value.

// decisionRefusal describes a policy decision that refuses the request
// (or would, in monitor mode).
func (s *Server) decisionRefusal(d *policy.Decision) *refusal.Refusal {
	return refusal.Describe(d, s.settings().cfg.Pacing.MaxWait.Duration())
}

// wouldRefuseHeader tells a monitored client (clients[].monitor_header)
// what the proxy would have answered its request: the decision, the status
// and the explanation of Proxy-Status's details, as an RFC 9651
// dictionary-like list item ("disallow; status=403; details=\"...\"").
const wouldRefuseHeader = "X-Robotsgate-Would-Refuse"

// wouldRefuse is the X-Robotsgate-Would-Refuse value of a monitored
// decision: what the refusal it stands for says.
func (s *Server) wouldRefuse(d *policy.Decision) string {
	r := s.decisionRefusal(d)
	return fmt.Sprintf("%s; status=%d; details=%s", r.Decision(), r.Status(), strconv.Quote(r.Details()))
}

// egressRefusal answers a destination refused before anything was sent:
// by the egress guard, a port rule, or a name that does not resolve (which
// is logged).
func (s *Server) egressRefusal(host string, err error) *refusal.Refusal {
	r := refusal.Egress(err)
	if r.Decision() == audit.UpstreamError {
		s.log.Info("destination lookup failed", "host", host, "err", err)
	}
	return r
}

// upstreamFailure is the refusal that stands for a failed exchange with
// the origin at host (upstream.Failure): the egress guard's refusal at
// dial time, or a 502/504 naming its cause only by its RFC 9209 type.
func (s *Server) upstreamFailure(ctx context.Context, host string, err error) *refusal.Refusal {
	f := s.upstream.Failure(ctx, host, err)
	if f.Denied != nil {
		return refusal.EgressDenied(f.Denied)
	}
	return refusal.New(audit.UpstreamError, f.ProxyError, f.Message).WithStatus(f.Status)
}
