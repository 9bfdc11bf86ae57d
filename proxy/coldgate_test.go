package proxy

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/config"
)

// One client asking for many uncached origins at once starts at most
// robots.cold_fetches_per_client robots.txt fetches; the others wait for a
// place, and past pacing.max_wait get 503 fetch-limited.
func TestColdFetchesPerClientAreBounded(t *testing.T) {
	var inFlight, most atomic.Int64
	release := make(chan struct{})
	started := make(chan struct{}, 64)
	o := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			fmt.Fprint(w, "page")
			return
		}
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		started <- struct{}{}
		<-release
		fmt.Fprint(w, "User-agent: *\nAllow: /\n")
	}))
	o.Start()
	t.Cleanup(o.Close)
	port := o.URL[strings.LastIndex(o.URL, ":")+1:]
	names := mapResolver{}
	for i := range 12 {
		names[fmt.Sprintf("o%d.test", i)] = "127.0.0.1"
	}
	cfg := testConfig(t, nil)
	cfg.Robots.ColdFetchesPerClient = 3
	cfg.Pacing.MaxWait = config.Duration(time.Second)
	p := startProxyWith(t, cfg, Options{Resolver: names})
	statuses := make(chan string, 12)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			resp, _ := get(t, p.client(), fmt.Sprintf("http://o%d.test:%s/page", i, port))
			statuses <- fmt.Sprint(resp.StatusCode, " ", resp.Header.Get("X-Robotsgate-Decision"))
		})
	}
	for range 3 {
		<-started // three fetches under way, the other five requests waiting
	}
	// The 1 s max_wait passes: the five waiting requests are refused.
	refused := 0
	for range 5 {
		if s := <-statuses; s == "503 fetch-limited" {
			refused++
		}
	}
	if refused != 5 || most.Load() != 3 {
		t.Errorf("%d of the 5 waiting requests refused, %d fetches at most at once; want 5 and 3", refused, most.Load())
	}
	close(release)
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != "200 " {
			t.Errorf("a request that had its place got %q", s)
		}
	}
	resp, body := get(t, p.client(), fmt.Sprintf("http://o%d.test:%s/page", 11, port))
	if resp.StatusCode != 200 {
		t.Errorf("after the others: %d %s", resp.StatusCode, body)
	}
}

// A response's RSL licence is fetched within the client's cold gate too: a
// client whose places are all taken waits pacing.max_wait, then gets 503
// fetch-limited, as for robots.txt (regression: 502 upstream-error, as if
// the origin had failed).
func TestColdFetchLimitOnAResponsesLicence(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	var port string
	o := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
		case "/slow.xml", "/other.xml":
			started <- struct{}{}
			<-release
			w.Header().Set("Content-Type", "application/rsl+xml")
			fmt.Fprint(w, `<rsl xmlns="https://rslstandard.org/rsl"><content url="/"><license><prohibits type="usage">search</prohibits></license></content></rsl>`)
		default:
			doc := "/slow.xml"
			if r.URL.Path == "/b" {
				doc = "/other.xml"
			}
			w.Header().Set("Link", fmt.Sprintf(`<http://lic.test:%s%s>; rel="license"; type="application/rsl+xml"`, port, doc))
			fmt.Fprint(w, "page")
		}
	}))
	o.Start()
	t.Cleanup(o.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	port = o.URL[strings.LastIndex(o.URL, ":")+1:]
	cfg := testConfig(t, nil)
	cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeEnforce, Purposes: []string{"train-ai"}}}
	cfg.Robots.ColdFetchesPerClient = 1
	cfg.Pacing.MaxWait = config.Duration(300 * time.Millisecond)
	p := startProxyWith(t, cfg, Options{Resolver: mapResolver{"page.test": "127.0.0.1", "lic.test": "127.0.0.1"}})
	c := p.client()
	get(t, c, "http://page.test:"+port+"/robots.txt") // robots.txt cached: only licences are cold now

	first := make(chan int, 1)
	go func() {
		resp, _ := get(t, p.client(), "http://page.test:"+port+"/a")
		first <- resp.StatusCode
	}()
	<-started // the first response's licence holds the client's one place
	resp, body := get(t, c, "http://page.test:"+port+"/b")
	checkRefusal(t, resp, 503, "fetch-limited", "http_request_denied")
	if resp.Header.Get("Retry-After") == "" {
		t.Errorf("fetch-limited without Retry-After: %s", body)
	}
	close(release)
	if s := <-first; s != http.StatusOK {
		t.Errorf("the request that had the place: %d, want 200 (its licence prohibits only search)", s)
	}
}
