//go:build unix

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/internal/redistest"
)

// pacedOrigin serves the given robots.txt and records when each page
// request arrives.
type pacedOrigin struct {
	*httptest.Server
	mu    sync.Mutex
	times []time.Time
}

func startPacedOrigin(t *testing.T, robotsTxt string) *pacedOrigin {
	t.Helper()
	o := &pacedOrigin{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, robotsTxt)
			return
		}
		o.mu.Lock()
		o.times = append(o.times, time.Now())
		o.mu.Unlock()
		io.WriteString(w, "page")
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *pacedOrigin) arrivals() []time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	ts := slices.Clone(o.times)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	return ts
}

// fleetConfig is a configuration sharing pacing through the Redis at addr.
func fleetConfig(t *testing.T, dir, redisAddr, onStoreError string) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("fleet-%s.yaml", onStoreError))
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
  max_wait: 30s
  store: redis
  redis: { addr: %q }
  on_store_error: %s
`, filepath.Join(dir, "certs", "ca.pem"), filepath.Join(dir, "certs", "ca-key.pem"), redisAddr, onStoreError))
	return path
}

// TestE2EFleetSharesCrawlDelayThroughRedis runs three robotsgate processes
// on one Redis; a client spreads nine concurrent requests over them, and
// the origin must see them at least the Crawl-delay apart.
func TestE2EFleetSharesCrawlDelayThroughRedis(t *testing.T) {
	redis := redistest.Start(t)
	const delay = 500 * time.Millisecond
	o := startPacedOrigin(t, "User-agent: *\nCrawl-delay: 0.5\n")
	dir := t.TempDir()
	cfg := fleetConfig(t, dir, redis.Addr, "refuse")
	var fleet []*proc
	for range 3 {
		fleet = append(fleet, startServe(t, dir, "-config", cfg))
	}
	var wg sync.WaitGroup
	for i := range 9 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := proxyClient(t, fleet[i%3].addr, "")
			if r := get(t, c, fmt.Sprintf("%s/page%d", o.URL, i)); r.status != 200 {
				t.Errorf("request %d through proxy %d: %d %s", i, i%3, r.status, r.body)
			}
		}()
	}
	wg.Wait()
	ts := o.arrivals()
	if len(ts) != 9 {
		t.Fatalf("origin saw %d requests, want 9", len(ts))
	}
	for i := 1; i < len(ts); i++ {
		if gap := ts[i].Sub(ts[i-1]); gap < delay-10*time.Millisecond {
			t.Errorf("requests %d and %d reached the origin %v apart, want at least %v", i-1, i, gap, delay)
		}
	}
	if total := ts[8].Sub(ts[0]); total > 8*delay+time.Second {
		t.Errorf("nine requests took %v, ideal %v", total, 8*delay)
	}
}

// TestE2ERedisOutage kills Redis under a running proxy: paced requests are
// refused (503 + Retry-After) promptly under on_store_error: refuse, or
// paced in-process under local; unpaced requests are served; nothing
// crashes; after Redis restarts, shared pacing works again by itself.
func TestE2ERedisOutage(t *testing.T) {
	for _, policy := range []string{"refuse", "local"} {
		t.Run(policy, func(t *testing.T) {
			redis := redistest.Start(t)
			paced := startPacedOrigin(t, "User-agent: *\nCrawl-delay: 0.3\n")
			free := startPacedOrigin(t, "User-agent: *\nAllow: /\n")
			dir := t.TempDir()
			p := startServe(t, dir, "-config", fleetConfig(t, dir, redis.Addr, policy))
			c := proxyClient(t, p.addr, "")
			if r := get(t, c, paced.URL+"/before"); r.status != 200 {
				t.Fatalf("with Redis up: %d %s", r.status, r.body)
			}

			redis.Kill()
			start := time.Now()
			r := get(t, c, paced.URL+"/during")
			took := time.Since(start)
			switch policy {
			case "refuse":
				if r.status != 503 || r.header.Get("X-Robotsgate-Decision") != "pacing-unavailable" || r.header.Get("Retry-After") == "" {
					t.Errorf("Redis down, refuse: %d %v %q", r.status, r.header, r.body)
				}
			case "local":
				if r.status != 200 {
					t.Errorf("Redis down, local: %d %q", r.status, r.body)
				}
				get(t, c, paced.URL+"/during2")
				if ts := paced.arrivals(); len(ts) < 3 || ts[len(ts)-1].Sub(ts[len(ts)-2]) < 290*time.Millisecond {
					t.Errorf("local pacing did not space requests: %v", ts)
				}
			}
			if took > 3*time.Second {
				t.Errorf("answer with Redis down took %v, want a few seconds at most", took)
			}
			if r := get(t, c, free.URL+"/unpaced"); r.status != 200 {
				t.Errorf("unpaced request with Redis down: %d", r.status)
			}

			redis.Restart()
			deadline := time.Now().Add(10 * time.Second)
			for {
				if r := get(t, c, paced.URL+"/after"); r.status == 200 && !p.exited() {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("pacing did not recover after Redis restarted; output:\n%s", p.out)
				}
				time.Sleep(100 * time.Millisecond) // polling for recovery, bounded
			}
			if p.exited() || strings.Contains(p.out.String(), "panic") {
				t.Errorf("the proxy did not survive the outage:\n%s", p.out)
			}
		})
	}
}

// TestE2EAuditLogReopensOnSIGHUP: logrotate moves the audit log away and
// sends SIGHUP; the next decisions go to a new file at the configured path.
func TestE2EAuditLogReopensOnSIGHUP(t *testing.T) {
	o := startPacedOrigin(t, "User-agent: *\nDisallow: /private\n")
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.log")
	cfgPath := filepath.Join(dir, "audit.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`listen: 127.0.0.1:0
admin_listen: ""
egress:
  allow_networks: [127.0.0.1/32]
mitm:
  ca_cert: %q
  ca_key: %q
log:
  audit: %q
`, filepath.Join(dir, "certs", "ca.pem"), filepath.Join(dir, "certs", "ca-key.pem"), audit))
	p := startServe(t, dir, "-config", cfgPath)
	c := proxyClient(t, p.addr, "")
	if r := get(t, c, o.URL+"/private/before"); r.status != 403 {
		t.Fatalf("before rotation: %d", r.status)
	}
	// The line is written when the response is done: wait for it (bounded).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile(audit); strings.Count(string(b), "\n") == 1 || time.Now().After(deadline) {
			break
		}
	}
	if err := os.Rename(audit, audit+".1"); err != nil {
		t.Fatal(err)
	}
	p.signal(syscall.SIGHUP)
	p.waitLog("config reloaded", 1)
	if r := get(t, c, o.URL+"/after"); r.status != 200 {
		t.Fatalf("after rotation: %d", r.status)
	}
	old, _ := os.ReadFile(audit + ".1")
	cur, err := os.ReadFile(audit)
	if err != nil {
		t.Fatalf("no new audit file after SIGHUP: %v", err)
	}
	if !strings.Contains(string(old), `"decision":"disallow"`) || strings.Contains(string(old), "/after") {
		t.Errorf("rotated file:\n%s", old)
	}
	if strings.Count(string(cur), "\n") != 1 || !strings.Contains(string(cur), o.URL+"/after") {
		t.Errorf("new file:\n%s", cur)
	}
}
