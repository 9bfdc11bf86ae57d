package proxy

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/admin"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/refusal"
)

// A refusal made before a decision is one value: the proxy answers with
// it, and /explain shows the same decision, status and message, with what
// the operator is told of its cause.
func TestExplainShowsTheProxysRefusalBeforeADecision(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	port := o.URL[strings.LastIndex(o.URL, ":")+1:]
	for _, tc := range []struct {
		name     string
		url      string
		cfg      func(*config.Config)
		decision string
		status   int
		why      string // in /explain's error
	}{
		{"deny_hosts", "http://denied.test:" + port + "/page", func(c *config.Config) { c.Egress.DenyHosts = []string{"denied.test"} },
			audit.EgressDenied, http.StatusForbidden, "egress.deny_hosts lists the host"},
		{"a name that does not resolve", "http://nowhere.test:" + port + "/page", nil,
			audit.UpstreamError, http.StatusBadGateway, "the destination's name could not be resolved: "},
		{"clients_default: deny", o.URL + "/page", func(c *config.Config) { c.ClientsDefault = config.ClientsDeny },
			audit.ClientDenied, http.StatusForbidden, "clients_default: deny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, nil)
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			p := startProxyWith(t, cfg, Options{Resolver: mapResolver{"denied.test": "127.0.0.2"}})
			resp, body := get(t, p.client(), tc.url, "Accept", "application/json")
			var told refusal.Explanation
			if err := json.Unmarshal([]byte(body), &told); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if resp.StatusCode != tc.status || resp.Header.Get("X-Robotsgate-Decision") != tc.decision {
				t.Fatalf("the proxy answered %d %s, want %d %s", resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision"), tc.status, tc.decision)
			}
			e, code := p.srv.Explain(t.Context(), admin.Query{URL: tc.url, Client: netip.MustParseAddr("127.0.0.1")})
			if code != http.StatusOK || e.Decision != tc.decision || e.Status != tc.status || e.Message != told.Message {
				t.Errorf("/explain: %d, %s %d %q; the proxy: %s %d %q", code, e.Decision, e.Status, e.Message, tc.decision, tc.status, told.Message)
			}
			if !strings.Contains(e.Error, tc.why) {
				t.Errorf("/explain's error %q does not say %q", e.Error, tc.why)
			}
		})
	}
}
