package proxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/robotsgate/robotsgate/config"
)

// startBusyOrigin serves on 127.0.0.2 an origin that answers every page
// 429 with Retry-After: 300, counting the page requests that reach it.
func startBusyOrigin(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var pages atomic.Int64
	o := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nAllow: /\n")
			return
		}
		pages.Add(1)
		w.Header().Set("Retry-After", "300")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Listener.Close()
	o.Listener = ln
	o.Start()
	t.Cleanup(o.Close)
	return o, &pages
}

// An origin that answered 429 with Retry-After: 300 (beyond max_wait) is
// paused: the next request is refused (origin-backoff) without reaching
// it. A sites entry with backoff: ignore is never paused, a clients entry
// with backoff: ignore never held: their next request reaches the origin.
// Monitor clients are never held either (a dry run).
func TestBackoffOverridesPerSiteAndClient(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     func(*config.Config)
		reaches bool
	}{
		{"default: paused", func(*config.Config) {}, false},
		{"site set to ignore pauses", func(c *config.Config) {
			c.Sites = []config.Site{{Hosts: []string{"127.0.0.2"}, Robots: config.RobotsObey, Backoff: config.BackoffIgnore}}
		}, true},
		{"client set to ignore pauses", func(c *config.Config) {
			c.Clients = []config.Client{{CIDR: "127.0.0.1/32", Mode: config.ModeEnforce, Backoff: config.BackoffIgnore}}
		}, true},
		{"monitor client", func(c *config.Config) {
			c.Clients = []config.Client{{CIDR: "127.0.0.1/32", Mode: config.ModeMonitor}}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, pages := startBusyOrigin(t)
			cfg := testConfig(t, nil)
			cfg.Pacing.MaxWait = config.Duration(0)
			tc.set(&cfg)
			c := startProxy(t, cfg).client()
			if resp, _ := get(t, c, o.URL+"/first"); resp.StatusCode != 429 {
				t.Fatalf("first: %d", resp.StatusCode)
			}
			resp, _ := get(t, c, o.URL+"/second")
			reached := pages.Load() == 2
			if reached != tc.reaches {
				t.Errorf("the second request reached the origin: %v, want %v (status %d, decision %q)",
					reached, tc.reaches, resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision"))
			}
			if !tc.reaches && resp.Header.Get("X-Robotsgate-Decision") != "origin-backoff" {
				t.Errorf("the paused origin's request: %d %q, want origin-backoff", resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision"))
			}
		})
	}
}
