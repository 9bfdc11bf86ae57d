package proxy

import (
	"context"
	"net/netip"
	"testing"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/pacing"
)

// BenchmarkCachedAllow is what the admission of a request costs when its
// robots.txt is cached and allows it without pacing, with the politeness
// governor on (pacing.backoff's defaults: every request looks whether its
// origin is paused, every answer is given to the governor), on while
// another origin is paused (every request then looks its own origin up),
// and off (pacing.backoff.enabled false, adaptive off: no governor at
// all), side by side in one run: go tool benchstat -col /governor. Each
// iteration is admit, as for a request through the proxy port, then the
// origin's 200 given to the policy engine, as the relay does.
func BenchmarkCachedAllow(b *testing.B) {
	o := startOrigin(b, "127.0.0.1", false, "User-agent: *\nAllow: /\n", 0)
	dest, err := origin.Parse(o.URL)
	if err != nil {
		b.Fatal(err)
	}
	for _, governor := range []string{"off", "on", "on-other-paused"} {
		cfg := testConfig(b, nil)
		cfg.Pacing.Backoff.Enabled = governor != "off"
		p := startProxy(b, cfg)
		s := p.srv
		if governor == "on-other-paused" {
			s.governor.Observe(context.Background(), "https://other.example", pacing.Answer{Status: 503, RetryAfter: "3600"})
		}
		a := admission{origin: dest, target: "/page", method: "GET", userAgent: "bench/1.0", clientAddr: "127.0.0.1:1",
			remote: netip.MustParseAddr("127.0.0.1"), route: routeProxyPort}
		if adm := s.admit(context.Background(), s.settings(), a, nil); adm.refused != nil || adm.d.Refused() {
			b.Fatalf("governor=%s: not allowed: %v %v", governor, adm.refused, adm.d.Verdict)
		}
		b.Run("governor="+governor, func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				st := s.settings()
				adm := s.admit(ctx, st, a, nil)
				st.engine.ObserveAnswer(ctx, &adm.d, pacing.Answer{Status: 200})
				adm.permit.Release()
			}
		})
	}
}
