//go:build linux

package e2e

// A transparent self-loop, through the real binary in a private network
// namespace: the firewall rule redirects every connection to port 80,
// robotsgate's own included (transparent.mark: 0 and no owner rule, the
// misconfiguration robotsgate warns about).

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/internal/netnstest"
)

// loopRules redirect every connection to the site's port 80, robotsgate's
// own too: no mark, no owner match.
const loopRules = `table inet robotsgate_e2e {
  chain output {
    type nat hook output priority -100; policy accept;
    ip daddr 203.0.113.0/24 tcp dport 80 redirect to :8081
  }
}`

// A request redirected to the transparent listener makes robotsgate fetch
// robots.txt, and the rule sends that fetch back to the listener: the
// connection is refused there as robotsgate's own, the client is answered
// 503 unreachable at once, and no nested request is judged.
func TestTransparentSelfLoopIsRefused(t *testing.T) {
	t.Parallel()
	needTool(t, "curl")
	const ip = "203.0.113.10"
	ns := netnstest.New(t, ip)
	ns.Nft(t, loopRules)
	ns.Hosts(t, ip+" site-a.test")
	site := startClientOriginOn(t, ns.Listen(t, ip+":80"), nil, clientRobotsTxt, 0)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "cfg.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`# written by the self-loop test
listen: 127.0.0.1:8080
admin_listen: 127.0.0.1:9090
robots:
  fetch_user_agent: %q
  fetch_timeout: 5s
egress:
  allow_networks: [203.0.113.0/24]
mitm:
  ca_cert: %q
  ca_key: %q
transparent:
  http_listen: 127.0.0.1:8081
  mark: 0
log:
  audit: "-"
`, e2eFetchUA, filepath.Join(dir, "certs", "ca.pem"), filepath.Join(dir, "certs", "ca-key.pem")))
	p, err := tryStartServeIn(t, ns.Prefix(), dir, "-config", cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	e := &clientEnv{dir: dir, p: p}
	p.waitLog("transparent HTTP on", 1)

	r := curlIn(t, ns.Prefix(), clientVars(), "http://site-a.test/data/loop")
	if r.code != 0 || r.status != http.StatusServiceUnavailable || r.header.Get("X-Robotsgate-Decision") != "unreachable" {
		t.Errorf("curl: exit %d, status %d, decision %q, want 503 unreachable: %s\n%s",
			r.code, r.status, r.header.Get("X-Robotsgate-Decision"), r.stderr, e.log())
	}
	e.waitAudit(t, "http://site-a.test/data/loop", "unreachable", http.StatusServiceUnavailable)
	p.waitLog("came from robotsgate's own upstream connection and was closed", 1)
	if site.saw("/robots.txt") || site.saw("/data/loop") {
		t.Error("the site was reached, though every connection to it is redirected")
	}
	if n := strings.Count(p.out.String(), `"url":"http://site-a.test/robots.txt"`); n > 0 {
		t.Errorf("%d nested requests for robots.txt were judged: the loop went round\n%s", n, e.log())
	}
	admin := &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		return ns.Dial("127.0.0.1:9090")
	}}}
	resp, err := admin.Get("http://127.0.0.1:9090/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body strings.Builder
	if _, err := ioCopy(&body, resp); err != nil {
		t.Fatal(err)
	}
	if v := seriesValue(body.String(), "robotsgate_transparent_self_loops_total"); v < 1 || v > 2 {
		t.Errorf("robotsgate_transparent_self_loops_total %v, want the one loop refused (at most one retry)", v)
	}
	if p.exited() {
		t.Fatalf("robotsgate exited: %s", e.log())
	}
}
