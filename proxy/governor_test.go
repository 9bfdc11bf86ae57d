package proxy

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/admin"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/refusal"
)

// startBusyOrigin serves on 127.0.0.2 an origin that answers every page
// 429 with Retry-After: 300, counting the page requests that reach it.
func startBusyOrigin(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var pages atomic.Int64
	o := serveAt(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nAllow: /\n")
			return
		}
		pages.Add(1)
		w.Header().Set("Retry-After", "300")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
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

// pageVisit is a page request as the probing origin saw it.
type pageVisit struct {
	arrived, answered time.Time
	status            int
}

// startProbedOrigin serves on 127.0.0.2 an origin that answers its page
// requests, in the order they arrive, with statuses (429 with
// Retry-After: 1; 200 once they are used up). Every request after the
// first is answered 300 ms after it arrived, so that a request the proxy
// let through before that answer is seen. probed receives each arrival
// after the first.
func startProbedOrigin(t *testing.T, statuses []int) (*httptest.Server, func() []pageVisit, chan struct{}) {
	t.Helper()
	var mu sync.Mutex
	var visits []pageVisit
	probed := make(chan struct{}, 64)
	o := serveAt(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nAllow: /\n")
			return
		}
		arrived := time.Now()
		mu.Lock()
		i := len(visits)
		status := http.StatusOK
		if i < len(statuses) {
			status = statuses[i]
		}
		visits = append(visits, pageVisit{arrived: arrived, status: status})
		mu.Unlock()
		if i > 0 {
			probed <- struct{}{}
			time.Sleep(300 * time.Millisecond) // the origin's response time, not synchronisation
		}
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		mu.Lock()
		visits[i].answered = time.Now()
		mu.Unlock()
		w.WriteHeader(status)
	}))
	return o, func() []pageVisit {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(visits)
	}, probed
}

// After a 429 with Retry-After: 1, the four requests held for the pause
// do not reach the origin together: exactly one does (the probe), and
// the others, with one sent while the probe was out, only after the
// origin answered it. A probe answered 429 again holds them for the new
// pause (1 s from that answer), after which one probe goes first again.
// Every follower's response says it was held (X-Robotsgate-Backoff).
// Times are the origin's own; 50 ms of slack for the pause's end.
func TestBackoffSendsOneProbeAfterAPause(t *testing.T) {
	const held = 4
	for _, tc := range []struct {
		name     string
		statuses []int // the answers, in order of arrival
		probes   int   // the requests that must go alone after a pause
	}{
		{"probe answered 200", []int{429}, 1},
		{"probe answered 429 again", []int{429, 429}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, visits, probed := startProbedOrigin(t, tc.statuses)
			cfg := testConfig(t, nil)
			cfg.Pacing.MaxWait = config.Duration(10 * time.Second)
			c := startProxy(t, cfg).client()
			if resp, _ := get(t, c, o.URL+"/first"); resp.StatusCode != 429 {
				t.Fatalf("first: %d", resp.StatusCode)
			}
			backoff := make(chan string, held+1)
			send := func(path string) {
				resp, err := c.Get(o.URL + path)
				if err != nil {
					t.Error(err)
					backoff <- ""
					return
				}
				resp.Body.Close()
				backoff <- resp.Header.Get("X-Robotsgate-Backoff")
			}
			for i := range held {
				go send("/held/" + strconv.Itoa(i))
			}
			<-probed // the probe is at the origin: a request sent now waits for its answer too
			go send("/late")
			for range held + 1 {
				if h := <-backoff; h == "" {
					t.Error("a held request's response has no X-Robotsgate-Backoff")
				}
			}
			v := visits()
			if len(v) != held+2 {
				t.Fatalf("the origin saw %d page requests, want %d", len(v), held+2)
			}
			for k := 1; k <= tc.probes; k++ {
				probe, prev := v[k], v[k-1]
				if wait := probe.arrived.Sub(prev.answered); wait < time.Second-50*time.Millisecond {
					t.Errorf("probe %d reached the origin %v after the 429 before it, want the 1 s pause", k, wait)
				}
				for j, later := range v[k+1:] {
					if later.arrived.Before(probe.answered) {
						t.Errorf("request %d reached the origin %v before probe %d was answered", k+1+j, probe.answered.Sub(later.arrived), k)
					}
				}
			}
		})
	}
}

// /explain says what holds a request after a pause: the pause while it
// lasts, then, the pause over, the wait for the answer to the first request
// sent after it (awaiting_probe); once that request is answered, nothing.
func TestExplainSaysRequestsAwaitTheProbe(t *testing.T) {
	o, _, _ := startProbedOrigin(t, []int{http.StatusTooManyRequests})
	p := startProxy(t, testConfig(t, nil))
	adminURL := startAdmin(t, p)
	c := p.client()
	if resp, _ := get(t, c, o.URL+"/first"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("first: %d", resp.StatusCode)
	}
	explain := func() *admin.BackoffInfo {
		_, body := adminGet(t, adminURL, "/explain?url="+url.QueryEscape(o.URL+"/next"))
		var e admin.Explanation
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return e.Backoff
	}
	if b := explain(); b == nil || b.AwaitingProbe {
		t.Fatalf("during the pause: backoff %+v, want the pause, not awaiting its probe", b)
	}
	waitFor(t, "the pause to end, its probe awaited", func() bool { b := explain(); return b != nil && b.AwaitingProbe })
	if resp, _ := get(t, c, o.URL+"/next"); resp.StatusCode != http.StatusOK { // the probe
		t.Fatalf("the probe: %d", resp.StatusCode)
	}
	if b := explain(); b != nil {
		t.Errorf("after the probe's answer: backoff %+v, want none", b)
	}
}

// The status page lists an origin whose pause is over while its probe is
// awaited, saying so, and no longer once the probe is answered.
func TestStatusPageListsOriginsAwaitingTheirProbe(t *testing.T) {
	o, _, _ := startProbedOrigin(t, []int{http.StatusTooManyRequests})
	p := startProxy(t, testConfig(t, nil))
	adminURL := startAdmin(t, p)
	c := p.client()
	if resp, _ := get(t, c, o.URL+"/first"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("first: %d", resp.StatusCode)
	}
	awaited := func() bool {
		for _, r := range tableText(t, renderedPage(t, adminURL+"/"), "paused")[1:] {
			if r[0] == o.URL {
				return r[2] == "over: its first request after it is awaited"
			}
		}
		return false
	}
	waitFor(t, "the paused origin to be listed as awaiting its probe", awaited)
	if resp, _ := get(t, c, o.URL+"/next"); resp.StatusCode != http.StatusOK {
		t.Fatalf("the probe: %d", resp.StatusCode)
	}
	if rows := tableText(t, renderedPage(t, adminURL+"/"), "paused")[1:]; len(rows) != 1 || len(rows[0]) != 1 {
		t.Errorf("after the probe's answer the paused origins are %q, want none", rows)
	}
}

// A paused origin's refusal says what is left of the pause, not the whole
// of it: an origin that answered 503 with Retry-After: 6 and is asked
// again 2.5 s later is refused (max_wait 0) with Retry-After 4 (3.5 s
// rounded up), in the header, the JSON body and the message alike. The
// bounds follow from when the 503 and the refusal may have been made,
// between sending each request and reading its answer.
func TestPausedOriginRetryAfterIsWhatIsLeft(t *testing.T) {
	const pause = 6 * time.Second
	var pages atomic.Int64
	o := serveAt(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nAllow: /\n")
			return
		}
		if pages.Add(1) == 1 {
			w.Header().Set("Retry-After", strconv.Itoa(int(pause/time.Second)))
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	cfg := testConfig(t, nil)
	cfg.Pacing.MaxWait = config.Duration(0)
	c := startProxy(t, cfg).client()
	sent0 := time.Now()
	if resp, _ := get(t, c, o.URL+"/first"); resp.StatusCode != 503 {
		t.Fatalf("first: %d, want the origin's 503", resp.StatusCode)
	}
	got0 := time.Now()
	// The time passing is what is tested: no event to wait for.
	time.Sleep(time.Until(got0.Add(2500 * time.Millisecond)))
	req, _ := http.NewRequest("GET", o.URL+"/second", nil)
	req.Header.Set("Accept", "application/json")
	sent1 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got1 := time.Now()
	least, most := refusal.Seconds(sent0.Add(pause).Sub(got1)), refusal.Seconds(got0.Add(pause).Sub(sent1))
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 429 || resp.Header.Get("X-Robotsgate-Decision") != "origin-backoff" || err != nil || ra < least || ra > most {
		t.Fatalf("second: %d %q, Retry-After %q; want 429 origin-backoff with Retry-After %d to %d (the pause was %v)",
			resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision"), resp.Header.Get("Retry-After"), least, most, pause)
	}
	var e struct {
		RetryAfter int    `json:"retry_after"`
		Message    string `json:"message"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.RetryAfter != ra || !strings.Contains(e.Message, "retry after "+strconv.Itoa(ra)+" s") {
		t.Errorf("JSON body %s (%v): want retry_after %d and the message saying so", body, err, ra)
	}
	if pages.Load() != 1 {
		t.Errorf("%d page requests reached the paused origin, want 1", pages.Load())
	}
}
