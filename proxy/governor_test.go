package proxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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

// With pacing.backoff.connection_errors an origin that refuses the
// connection is paused (for initial, 5 s: beyond max_wait 0 the next
// request is refused with origin-backoff, naming the failure); without,
// every request tries again (502). The site ignores robots.txt, which
// could not be fetched either.
func TestConnectionErrorsPauseOnlyWhenAsked(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close() // nothing listens: the connection is refused
	for _, asked := range []bool{false, true} {
		cfg := testConfig(t, nil)
		cfg.Pacing.MaxWait = config.Duration(0)
		cfg.Pacing.Backoff.ConnectionErrors = asked
		cfg.Sites = []config.Site{{Hosts: []string{"127.0.0.2"}, Robots: config.RobotsIgnore}}
		c := startProxy(t, cfg).client()
		if resp, _ := get(t, c, closed+"/first"); resp.StatusCode != 502 {
			t.Fatalf("connection_errors %v, first: %d", asked, resp.StatusCode)
		}
		resp, body := get(t, c, closed+"/second")
		want, decision := 502, "upstream-error"
		if asked {
			want, decision = 429, "origin-backoff"
		}
		if resp.StatusCode != want || resp.Header.Get("X-Robotsgate-Decision") != decision ||
			asked && !strings.Contains(body, "the origin could not be reached") {
			t.Errorf("connection_errors %v, second: %d %q %q; want %d %s", asked, resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision"), body, want, decision)
		}
	}
}
