package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/config"
)

// thirdSite is the site a page names licences on: its robots.txt
// disallows /private and asks for a Crawl-delay; it records when each
// request arrived, and by whom.
type thirdSite struct {
	mu       sync.Mutex
	arrivals map[string][]time.Time // by path prefix: /robots.txt, /private/, /lic/
	agents   []string
}

const thirdDelay = 500 * time.Millisecond

func (s *thirdSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	s.mu.Lock()
	key := r.URL.Path
	if i := strings.Index(key[1:], "/"); i >= 0 {
		key = key[:i+2]
	}
	s.arrivals[key] = append(s.arrivals[key], now)
	s.agents = append(s.agents, r.UserAgent())
	s.mu.Unlock()
	if r.URL.Path == "/robots.txt" {
		fmt.Fprintf(w, "User-agent: *\nDisallow: /private\nCrawl-delay: %g\n", thirdDelay.Seconds())
		return
	}
	w.Header().Set("Content-Type", "application/rsl+xml")
	fmt.Fprint(w, `<rsl xmlns="https://rslstandard.org/rsl"><content url="/"><license><permits type="usage">all</permits></license></content></rsl>`)
}

func (s *thirdSite) seen(key string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.arrivals[key]...)
}

// A page names eight licence URLs on a third site, two under the path its
// robots.txt disallows and six elsewhere, all with a new query each time
// (the reflector of issue 30). Through three such pages the third site
// sees its robots.txt fetched, no request for a disallowed path, licence
// fetches no closer than its Crawl-delay, at most 2 a response
// (usage.license_fetches_per_response: 4, two spent on the disallowed
// ones) and at most 3 in all (usage.license_fetches_per_origin: 3); the
// client's responses are withheld as usage-unknown (usage.on_unknown).
func TestLicenceFetchesObeyTheThirdSite(t *testing.T) {
	third := &thirdSite{arrivals: map[string][]time.Time{}}
	thirdSrv := serveAt(t, "127.0.0.3", third)
	var n int
	var mu sync.Mutex
	page := serveAt(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
			return
		}
		mu.Lock()
		n++
		id := n
		mu.Unlock()
		for i := range 8 {
			path := "/lic/"
			if i < 2 {
				path = "/private/"
			}
			w.Header().Add("Link", fmt.Sprintf(`<%s%sx?id=%d-%d>; rel="license"; type="application/rsl+xml"`, thirdSrv.URL, path, id, i))
		}
		fmt.Fprint(w, "page")
	}))
	cfg := testConfig(t, nil)
	cfg.Robots.FetchUserAgent = "robotsgate-test/1.0"
	cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeEnforce, Purposes: []string{"train-ai"}}}
	cfg.Usage.LicenseFetchesPerResponse = 4
	cfg.Usage.LicenseFetchesPerOrigin = 3
	cfg.Pacing.MaxWait = config.Duration(5 * time.Second)
	p := startProxy(t, cfg)
	for i := range 3 {
		resp, body := get(t, p.client(), fmt.Sprintf("%s/page-%d", page.URL, i))
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("X-Robotsgate-Decision") != "usage-unknown" {
			t.Errorf("page %d: %d %s: want 503 usage-unknown (licences robotsgate may not fetch)\n%s",
				i, resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision"), body)
		}
		if i == 0 && !strings.Contains(body, "not fetched") {
			t.Errorf("the refusal does not say the licence was not fetched:\n%s", body)
		}
	}
	if r := third.seen("/robots.txt"); len(r) != 1 {
		t.Errorf("the third site's robots.txt was fetched %d times, want once", len(r))
	}
	if r := third.seen("/private/"); len(r) != 0 {
		t.Errorf("the third site received %d requests under its disallowed /private", len(r))
	}
	lic := third.seen("/lic/")
	if len(lic) != 3 {
		t.Errorf("the third site received %d licence requests, want 3 (usage.license_fetches_per_origin)", len(lic))
	}
	for i := 1; i < len(lic); i++ {
		if gap := lic[i].Sub(lic[i-1]); gap < thirdDelay {
			t.Errorf("licence requests %d and %d arrived %v apart, closer than the Crawl-delay %v", i, i+1, gap, thirdDelay)
		}
	}
	for _, ua := range third.agents {
		if ua != cfg.Robots.FetchUserAgent {
			t.Errorf("the third site was asked by %q, not robotsgate's own agent", ua)
		}
	}
	_, m := adminGet(t, startAdmin(t, p), "/metrics")
	// Per page, four of the eight are looked for: page 1, two refused by
	// robots.txt and two fetched; page 2, two refused, one fetched, one
	// over the origin's cap; page 3, all four over it.
	for outcome, want := range map[string]string{"fetched": "3", "refused": "4", "origin_cap": "5", "response_cap": "12"} {
		if got := metricValue(m, fmt.Sprintf(`robotsgate_license_fetches_total{outcome=%q}`, outcome)); got != want {
			t.Errorf("robotsgate_license_fetches_total{outcome=%q} = %q, want %s", outcome, got, want)
		}
	}
}

// A third site that answers a licence fetch 429 with Retry-After pauses
// as it would for any request: the next licence on it is not fetched
// while the pause lasts (longer than pacing.max_wait: refused, not held).
func TestLicenceFetchesHeedTheThirdSitesPause(t *testing.T) {
	var mu sync.Mutex
	var licences int
	thirdSrv := serveAt(t, "127.0.0.3", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
			return
		}
		mu.Lock()
		licences++
		mu.Unlock()
		w.Header().Set("Retry-After", "600")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	var n int
	page := serveAt(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
			return
		}
		mu.Lock()
		n++
		id := n
		mu.Unlock()
		w.Header().Set("Link", fmt.Sprintf(`<%s/lic/x?id=%d>; rel="license"; type="application/rsl+xml"`, thirdSrv.URL, id))
		fmt.Fprint(w, "page")
	}))
	cfg := testConfig(t, nil)
	cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeEnforce, Purposes: []string{"train-ai"}}}
	cfg.Pacing.MaxWait = config.Duration(time.Second)
	p := startProxy(t, cfg)
	for i := range 3 {
		resp, body := get(t, p.client(), fmt.Sprintf("%s/page-%d", page.URL, i))
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("X-Robotsgate-Decision") != "usage-unknown" {
			t.Errorf("page %d: %d %s, want 503 usage-unknown\n%s", i, resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision"), body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if licences != 1 {
		t.Errorf("the third site received %d licence requests, want 1: its 429 pauses it", licences)
	}
}

// A licence a response names on its own origin is fetched while that
// response holds the origin's only permit (pacing.max_concurrency: 1):
// robotsgate's own fetches are not counted in it, as robots.txt fetches
// are not, so the response does not wait pacing.max_wait for a permit it
// holds itself.
func TestLicenceOnTheSameOriginUnderMaxConcurrency(t *testing.T) {
	site := serveAt(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
		case "/license.xml":
			w.Header().Set("Content-Type", "application/rsl+xml")
			fmt.Fprint(w, `<rsl xmlns="https://rslstandard.org/rsl"><content url="/"><license><permits type="usage">all</permits></license></content></rsl>`)
		default:
			w.Header().Set("Link", `</license.xml>; rel="license"; type="application/rsl+xml"`)
			fmt.Fprint(w, "page")
		}
	}))
	cfg := testConfig(t, nil)
	cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeEnforce, Purposes: []string{"train-ai"}}}
	cfg.Pacing.MaxConcurrency = 1
	cfg.Pacing.MaxWait = config.Duration(10 * time.Second)
	p := startProxy(t, cfg)
	start := time.Now()
	resp, body := get(t, p.client(), site.URL+"/page")
	if took := time.Since(start); resp.StatusCode != http.StatusOK || took >= 10*time.Second {
		t.Errorf("%d after %v: %s; want 200 at once (the licence permits everything)", resp.StatusCode, took, body)
	}
}
