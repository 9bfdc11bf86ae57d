//go:build unix

package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/internal/redistest"
)

// politeFleetConfig is fleetConfig with max_wait 0 (a paused origin's
// request is refused at once, with the pause's time left) and the
// backoff defaults.
func politeFleetConfig(t *testing.T, dir, redisAddr string) string {
	t.Helper()
	path := filepath.Join(dir, "polite-fleet.yaml")
	writeFile(t, path, fmt.Sprintf(`listen: 127.0.0.1:0
admin_listen: ""
robots:
  fetch_timeout: 5s
egress:
  allow_networks: [127.0.0.1/32]
mitm:
  ca_cert: %q
  ca_key: %q
pacing:
  max_wait: 0s
  store: redis
  redis: { addr: %q }
`, filepath.Join(dir, "certs", "ca.pem"), filepath.Join(dir, "certs", "ca-key.pem"), redisAddr))
	return path
}

// waitPaused waits (bounded) until the instance whose admin listener is
// admin counts n origins as paused: a pause another instance recorded
// reaches it through Redis' channel, and nothing signals that to the test.
func waitPaused(t *testing.T, admin string, n float64, p *proc) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); metricValue(t, admin, "robotsgate_origins_in_backoff") != n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the instance never counted %v origins as paused; output:\n%s", n, p.out)
		}
	}
}

// TestE2EFleetPausesAfterFailuresInARow: two instances on one Redis, an
// origin that answers every page 502. Requests go one after the other,
// alternately through each instance: the first three reach the origin
// (pacing.backoff.failures.in_a_row 3, counted by the fleet: two through
// the first instance, one through the second), the third pausing it; the
// fourth, through the second instance, is refused with 429 origin-backoff
// naming the three failures, and never reaches the origin.
func TestE2EFleetPausesAfterFailuresInARow(t *testing.T) {
	redis := redistest.Start(t)
	o := startScriptedOrigin(t, "User-agent: *\nAllow: /\n", func(_ int64, w http.ResponseWriter) int {
		w.WriteHeader(http.StatusBadGateway)
		return http.StatusBadGateway
	})
	dir := t.TempDir()
	cfg := politeFleetConfig(t, dir, redis.Addr)
	a, b := startServe(t, t.TempDir(), "-config", cfg), startServe(t, t.TempDir(), "-config", cfg, "-admin-listen", "127.0.0.1:0")
	ca, cb := proxyClient(t, a.addr, ""), proxyClient(t, b.addr, "")
	for i, c := range []*http.Client{ca, cb, ca} {
		if r := get(t, c, fmt.Sprintf("%s/page-%d", o.URL, i)); r.status != http.StatusBadGateway {
			t.Fatalf("request %d: %d %q, want the origin's 502 relayed (not paused before the third failure)", i+1, r.status, r.body)
		}
	}
	waitPaused(t, adminOf(t, b), 1, b)
	r := get(t, cb, o.URL+"/page-4")
	if r.status != http.StatusTooManyRequests || r.header.Get("X-Robotsgate-Decision") != "origin-backoff" ||
		!strings.Contains(r.body, "(3 failures in a row)") {
		t.Errorf("the fourth request: %d %q %q, want 429 origin-backoff naming the failures", r.status, r.header.Get("X-Robotsgate-Decision"), r.body)
	}
	if n := len(o.snapshot()); n != 3 {
		t.Errorf("the origin got %d requests, want 3", n)
	}
}

// TestE2ERetryAfterBeyondBackoffMaxIsObeyedByTheFleet: an origin answers
// 429 with Retry-After: 7200 through one instance of a fleet; the other
// refuses the next request with 429 origin-backoff and a Retry-After of
// the time left of those two hours, not the hour of pacing.backoff.max.
func TestE2ERetryAfterBeyondBackoffMaxIsObeyedByTheFleet(t *testing.T) {
	redis := redistest.Start(t)
	o := startScriptedOrigin(t, "User-agent: *\nAllow: /\n", func(_ int64, w http.ResponseWriter) int {
		w.Header().Set("Retry-After", "7200")
		w.WriteHeader(http.StatusTooManyRequests)
		return http.StatusTooManyRequests
	})
	dir := t.TempDir()
	cfg := politeFleetConfig(t, dir, redis.Addr)
	a, b := startServe(t, t.TempDir(), "-config", cfg), startServe(t, t.TempDir(), "-config", cfg, "-admin-listen", "127.0.0.1:0")
	if r := get(t, proxyClient(t, a.addr, ""), o.URL+"/first"); r.status != http.StatusTooManyRequests || r.header.Get("X-Robotsgate-Decision") != "" {
		t.Fatalf("the first request: %d %q, want the origin's own 429", r.status, r.header.Get("X-Robotsgate-Decision"))
	}
	waitPaused(t, adminOf(t, b), 1, b)
	r := get(t, proxyClient(t, b.addr, ""), o.URL+"/second")
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	// The time left, rounded up to whole seconds; the processes' start and
	// the channel take well under a minute.
	if r.header.Get("X-Robotsgate-Decision") != "origin-backoff" || err != nil || secs > 7200 || secs < 7200-60 {
		t.Errorf("the second request: %d %s, Retry-After %q; want origin-backoff with about 7200 s left", r.status, r.header.Get("X-Robotsgate-Decision"), r.header.Get("Retry-After"))
	}
	if n := len(o.snapshot()); n != 1 {
		t.Errorf("the origin got %d requests, want 1", n)
	}
}
