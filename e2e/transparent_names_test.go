//go:build linux

package e2e

// A name with several addresses, through the real binary in a private
// network namespace whose /etc/hosts gives both.test the attacker's
// address first and the victim's second.

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/robotsgate/robotsgate/internal/netnstest"
)

// A client that connects to the victim's address with Host: both.test is
// judged by the victim's robots.txt, fetched from the victim's address,
// and refused; the attacker's robots.txt (allow everything) is never
// what judges it.
func TestTransparentNameWithSeveralAddressesIsJudgedWhereItGoes(t *testing.T) {
	t.Parallel()
	needTool(t, "curl")
	const attackerIP, victimIP = "203.0.113.20", "203.0.113.21"
	ns := netnstest.New(t, attackerIP, victimIP)
	ns.Nft(t, sameHostRules)
	ns.Hosts(t, attackerIP+" both.test", victimIP+" both.test")
	attacker := startClientOriginOn(t, ns.Listen(t, attackerIP+":80"), nil, "User-agent: *\nAllow: /\n", 0)
	victim := startClientOriginOn(t, ns.Listen(t, victimIP+":80"), nil, clientRobotsTxt, 0) // Disallow: /private
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "cfg.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`# written by the transparent names test
listen: 127.0.0.1:8080
admin_listen: ""
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
  tls_listen: 127.0.0.1:8443
  mark: %#x
log:
  audit: "-"
`, e2eFetchUA, filepath.Join(dir, "certs", "ca.pem"), filepath.Join(dir, "certs", "ca-key.pem"), transparentMark))
	p, err := tryStartServeIn(t, ns.Prefix(), dir, "-config", cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	e := &clientEnv{dir: dir, p: p}
	p.waitLog("transparent HTTP on", 1)

	r := curlIn(t, ns.Prefix(), clientVars(), "-H", "Host: both.test", "http://"+victimIP+"/private/x")
	if r.code != 0 || r.status != http.StatusForbidden || r.header.Get("X-Robotsgate-Decision") != "disallow" {
		t.Errorf("curl to the victim's address with Host: both.test: exit %d, status %d, decision %q, want 403 disallow: %s\n%s",
			r.code, r.status, r.header.Get("X-Robotsgate-Decision"), r.stderr, e.log())
	}
	if victim.saw("/private/x") || attacker.saw("/private/x") {
		t.Error("the refused request reached an origin")
	}
	if !victim.saw("/robots.txt") {
		t.Errorf("the victim's robots.txt was never fetched from its address\n%s", e.log())
	}
	r = curlIn(t, ns.Prefix(), clientVars(), "-H", "Host: both.test", "http://"+attackerIP+"/private/y")
	if r.code != 0 || r.status != http.StatusOK || !attacker.saw("/private/y") {
		t.Errorf("curl to the attacker's address: exit %d, status %d: its own robots.txt allows it\n%s", r.code, r.status, e.log())
	}
}
