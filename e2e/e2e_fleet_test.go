//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// reset forgets the arrivals so far.
func (o *pacedOrigin) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.times = nil
}

// getAs is get with a User-Agent, returning the error instead of failing
// the test, so that it can run on another goroutine.
func getAs(c *http.Client, rawURL, ua string) (response, error) {
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		return response{}, err
	}
	req.Header.Set("User-Agent", ua)
	resp, err := c.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, string(body)}, err
}

// warmUp sends one request through each proxy under the robots.txt group
// "warmup", which has no Crawl-delay, so that every instance has an open
// connection to the origin before the paced requests: the docs (Accuracy)
// do not count the time an instance spends opening a connection after its
// slot, so a paced request must not open one for the spacing across
// instances to be what the shared schedule guarantees.
func warmUp(t *testing.T, o *pacedOrigin, clients ...*http.Client) {
	t.Helper()
	for i, c := range clients {
		if r, err := getAs(c, fmt.Sprintf("%s/warmup%d", o.URL, i), "warmup"); err != nil || r.status != 200 {
			t.Fatalf("warm-up request through proxy %d: %d %v", i, r.status, err)
		}
	}
	o.reset()
}

// adminOf returns the base URL of p's admin listener (serve -admin-listen),
// read from its start-up log.
func adminOf(t *testing.T, p *proc) string {
	t.Helper()
	m := adminOnRE.FindStringSubmatch(p.out.String())
	if m == nil {
		t.Fatalf("no admin address in the start-up log:\n%s", p.out)
	}
	return "http://" + m[1]
}

// adminStatus GETs url and returns the status and body.
func adminStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: requestTimeout}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// storeErrors reads robotsgate_pacing_store_errors_total from the admin
// listener's /metrics.
func storeErrors(t *testing.T, admin string) float64 {
	t.Helper()
	_, body := adminStatus(t, admin+"/metrics")
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, "robotsgate_pacing_store_errors_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("robotsgate_pacing_store_errors_total %q: %v", v, err)
			}
			return f
		}
	}
	t.Fatalf("no robotsgate_pacing_store_errors_total in /metrics")
	return 0
}

// concurrently runs the requests at once and returns their results in
// order.
func concurrently(reqs ...func() (response, error)) ([]response, []error) {
	rs, errs := make([]response, len(reqs)), make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs[i], errs[i] = req()
		}()
	}
	wg.Wait()
	return rs, errs
}

// waitSeconds is the X-Robotsgate-Wait of r, 0 when absent.
func waitSeconds(r response) float64 {
	w, _ := strconv.ParseFloat(r.header.Get("X-Robotsgate-Wait"), 64)
	return w
}

func (o *pacedOrigin) arrivals() []time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	ts := slices.Clone(o.times)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	return ts
}

// fleetConfig is a configuration sharing pacing through the Redis at addr.
// Its paths are absolute but for the state directory's: each instance
// runs in a directory of its own, as docs/fleet.md says.
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

// fleetRobots paces every agent but "warmup" (see warmUp).
const fleetRobots = "User-agent: warmup\nAllow: /\n\nUser-agent: *\nCrawl-delay: %s\n"

// TestE2EFleetSharesCrawlDelayThroughRedis runs three robotsgate processes
// on one Redis; a client spreads nine concurrent requests over them, and
// the origin must see them at least the Crawl-delay apart, less
// arrivalJitter (the origin's own work before its handler runs). Each
// instance's connection to the origin is open beforehand: the docs do not
// promise the spacing across instances for a request that opens one.
func TestE2EFleetSharesCrawlDelayThroughRedis(t *testing.T) {
	redis := redistest.Start(t)
	const delay = 500 * time.Millisecond
	o := startPacedOrigin(t, fmt.Sprintf(fleetRobots, "0.5"))
	dir := t.TempDir()
	cfg := fleetConfig(t, dir, redis.Addr, "refuse")
	var clients []*http.Client
	for range 3 {
		clients = append(clients, proxyClient(t, startServe(t, t.TempDir(), "-config", cfg).addr, "")) // a state directory each
	}
	warmUp(t, o, clients...)
	var wg sync.WaitGroup
	for i := range 9 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := getAs(clients[i%3], fmt.Sprintf("%s/page%d", o.URL, i), "bot")
			if err != nil || r.status != 200 {
				t.Errorf("request %d through proxy %d: %d %s %v", i, i%3, r.status, r.body, err)
			}
		}()
	}
	wg.Wait()
	ts := o.arrivals()
	if len(ts) != 9 {
		t.Fatalf("origin saw %d requests, want 9", len(ts))
	}
	for i := 1; i < len(ts); i++ {
		if gap := ts[i].Sub(ts[i-1]); gap < delay-arrivalJitter {
			t.Errorf("requests %d and %d reached the origin %v apart, less than the Crawl-delay %v by more than %v", i-1, i, gap, delay, arrivalJitter)
		}
	}
	if total := ts[8].Sub(ts[0]); total > 8*delay+time.Second {
		t.Errorf("nine requests took %v, ideal %v", total, 8*delay)
	}
}

// TestE2ERedisOutage kills Redis under two running proxies: paced requests
// are refused (503 + Retry-After) promptly under on_store_error: refuse, or
// paced in-process under local; unpaced requests are served; nothing
// crashes; after Redis restarts, shared pacing works again by itself: two
// concurrent requests through the two proxies are spaced by the shared
// schedule, which in-process pacing would not do.
func TestE2ERedisOutage(t *testing.T) {
	for _, policy := range []string{"refuse", "local"} {
		t.Run(policy, func(t *testing.T) {
			redis := redistest.Start(t)
			const delay = 300 * time.Millisecond
			paced := startPacedOrigin(t, fmt.Sprintf(fleetRobots, "0.3"))
			free := startPacedOrigin(t, "User-agent: *\nAllow: /\n")
			dir := t.TempDir()
			cfg := fleetConfig(t, dir, redis.Addr, policy)
			p, q := startServe(t, t.TempDir(), "-config", cfg, "-admin-listen", "127.0.0.1:0"), startServe(t, t.TempDir(), "-config", cfg)
			c, cq := proxyClient(t, p.addr, ""), proxyClient(t, q.addr, "")
			admin := adminOf(t, p)
			warmUp(t, paced, c, cq)
			if r := get(t, c, paced.URL+"/before"); r.status != 200 {
				t.Fatalf("with Redis up: %d %s", r.status, r.body)
			}
			if code, body := adminStatus(t, admin+"/readyz"); code != 200 || body != "ready\nredis: server at "+redis.Addr+"\n" {
				t.Errorf("/readyz with Redis up: %d %q", code, body)
			}
			if v := storeErrors(t, admin); v != 0 {
				t.Errorf("robotsgate_pacing_store_errors_total %v with Redis up, want 0", v)
			}

			redis.Kill()
			start := time.Now()
			r := get(t, c, paced.URL+"/during")
			took := time.Since(start)
			if code, body := adminStatus(t, admin+"/readyz"); code != 503 || !strings.HasPrefix(body, "not ready: ") {
				t.Errorf("/readyz with Redis down: %d %q, want 503 saying why", code, body)
			}
			switch policy {
			case "refuse":
				if r.status != 503 || r.header.Get("X-Robotsgate-Decision") != "pacing-unavailable" || r.header.Get("Retry-After") == "" {
					t.Errorf("Redis down, refuse: %d %v %q", r.status, r.header, r.body)
				}
				// The counter counts failed calls to Redis (the first, then
				// one probe a second), not the requests refused meanwhile.
				burst := time.Now()
				for i := range 20 {
					if r := get(t, c, fmt.Sprintf("%s/refused%d", paced.URL, i)); r.status != 503 {
						t.Errorf("Redis down, refuse: %d", r.status)
					}
				}
				if v, most := storeErrors(t, admin), 2+time.Since(burst).Seconds(); v < 1 || v > most {
					t.Errorf("robotsgate_pacing_store_errors_total %v after 21 refusals in %v, want 1 to %.0f (failed calls to Redis)", v, time.Since(burst).Round(time.Millisecond), most)
				}
			case "local":
				if r.status != 200 {
					t.Errorf("Redis down, local: %d %q", r.status, r.body)
				}
				if v := storeErrors(t, admin); v < 1 {
					t.Errorf("robotsgate_pacing_store_errors_total %v after a failed call to Redis, want at least 1", v)
				}
				get(t, c, paced.URL+"/during2")
				if ts := paced.arrivals(); len(ts) < 3 || ts[len(ts)-1].Sub(ts[len(ts)-2]) < delay-arrivalJitter {
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
			// Under local pacing (or refusals) a pair of concurrent
			// requests, one through each proxy, is not held; through the
			// shared schedule one of the two waits for the other's slot.
			deadline := time.Now().Add(10 * time.Second)
			for attempt := 1; ; attempt++ {
				// Longer than the interval: neither proxy's in-process
				// schedule may still hold a request of its own.
				time.Sleep(delay + 100*time.Millisecond)
				paced.reset()
				rs, errs := concurrently(func() (response, error) { return getAs(c, paced.URL+"/after-p", "bot") },
					func() (response, error) { return getAs(cq, paced.URL+"/after-q", "bot") })
				if errs[0] == nil && errs[1] == nil && rs[0].status == 200 && rs[1].status == 200 &&
					max(waitSeconds(rs[0]), waitSeconds(rs[1])) >= delay.Seconds()/2 {
					ts := paced.arrivals()
					if len(ts) != 2 || ts[1].Sub(ts[0]) < delay-arrivalJitter {
						t.Errorf("shared pacing after the restart: arrivals %v, want 2 at least %v apart less %v", ts, delay, arrivalJitter)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("shared pacing did not resume after Redis restarted (%d attempts; last pair: status %d and %d, X-Robotsgate-Wait %q and %q, errors %v); output:\n%s\n%s",
						attempt, rs[0].status, rs[1].status, rs[0].header.Get("X-Robotsgate-Wait"), rs[1].header.Get("X-Robotsgate-Wait"), errs, p.out, q.out)
				}
			}
			if code, body := adminStatus(t, admin+"/readyz"); code != 200 {
				t.Errorf("/readyz after Redis came back: %d %q", code, body)
			}
			for _, proxy := range []*proc{p, q} {
				if proxy.exited() || strings.Contains(proxy.out.String(), "panic") {
					t.Errorf("a proxy did not survive the outage:\n%s", proxy.out)
				}
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
	auditRecords(t, audit, 1) // written after the response, in the next batch
	if err := os.Rename(audit, audit+".1"); err != nil {
		t.Fatal(err)
	}
	p.signal(syscall.SIGHUP)
	p.waitLog("config reloaded", 1)
	if r := get(t, c, o.URL+"/after"); r.status != 200 {
		t.Fatalf("after rotation: %d", r.status)
	}
	auditRecords(t, audit, 1)
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

// metricValue reads an unlabelled metric from an admin listener's
// /metrics, -1 when absent.
func metricValue(t *testing.T, admin, name string) float64 {
	t.Helper()
	_, body := adminStatus(t, admin+"/metrics")
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s %q: %v", name, v, err)
			}
			return f
		}
	}
	return -1
}

// TestE2EFleetPausesAnOriginSeenAnsweringOneInstance: two instances on one
// Redis; the origin answers a request through the first 429 with
// Retry-After: 3. Once the second instance counts the origin as paused
// (robotsgate_origins_in_backoff, read until it does), a request through
// it is held until the pause ends: it reaches the origin no sooner than
// 3 s after the 429, and says why it waited.
func TestE2EFleetPausesAnOriginSeenAnsweringOneInstance(t *testing.T) {
	redis := redistest.Start(t)
	o := startScriptedOrigin(t, "User-agent: *\nAllow: /\n", func(n int64, w http.ResponseWriter) int {
		if n != 1 {
			return http.StatusOK
		}
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusTooManyRequests)
		return http.StatusTooManyRequests
	})
	dir := t.TempDir()
	cfg := fleetConfig(t, dir, redis.Addr, "refuse")
	a, b := startServe(t, t.TempDir(), "-config", cfg), startServe(t, t.TempDir(), "-config", cfg, "-admin-listen", "127.0.0.1:0")
	if r := get(t, proxyClient(t, a.addr, ""), o.URL+"/through-a"); r.status != 429 {
		t.Fatalf("through the first instance: %d, want the origin's 429", r.status)
	}
	admin := adminOf(t, b)
	for deadline := time.Now().Add(5 * time.Second); metricValue(t, admin, "robotsgate_origins_in_backoff") != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the second instance never counted the origin as paused; output:\n%s", b.out)
		}
	}
	r := get(t, proxyClient(t, b.addr, ""), o.URL+"/through-b")
	hits := o.snapshot()
	if r.status != 200 || len(hits) != 2 {
		t.Fatalf("through the second instance: %d, %d requests at the origin", r.status, len(hits))
	}
	if gap := hits[1].at.Sub(hits[0].at); gap < 3*time.Second-arrivalJitter {
		t.Errorf("the second instance's request reached the origin %v after the 429 with Retry-After: 3", gap.Round(time.Millisecond))
	}
	if h := r.header.Get("X-Robotsgate-Backoff"); !strings.Contains(h, "the origin answered 429 with Retry-After: 3") {
		t.Errorf("X-Robotsgate-Backoff %q", h)
	}
}

// TestE2EFleetFetchesAColdRobotsTxtOnce: two instances on one Redis are
// asked for the same cold origin at the same moment; its robots.txt takes
// 300 ms to answer, so both would fetch it: the fleet's fetch lock makes
// one fetch it and the other wait for its record. Both requests are
// served.
func TestE2EFleetFetchesAColdRobotsTxtOnce(t *testing.T) {
	redis := redistest.Start(t)
	var fetches atomic.Int64
	o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fetches.Add(1)
			time.Sleep(300 * time.Millisecond) // a slow robots.txt: both instances are asked while it is fetched
			io.WriteString(w, "User-agent: *\nAllow: /\n")
			return
		}
		io.WriteString(w, "page")
	}))
	t.Cleanup(o.Close)
	dir := t.TempDir()
	cfg := fleetConfig(t, dir, redis.Addr, "refuse")
	pa, pb := startServe(t, t.TempDir(), "-config", cfg), startServe(t, t.TempDir(), "-config", cfg)
	ca, cb := proxyClient(t, pa.addr, ""), proxyClient(t, pb.addr, "")
	rs, errs := concurrently(func() (response, error) { return getAs(ca, o.URL+"/a", "bot") },
		func() (response, error) { return getAs(cb, o.URL+"/b", "bot") })
	for i := range rs {
		if errs[i] != nil || rs[i].status != 200 {
			t.Errorf("request %d: %d %v", i, rs[i].status, errs[i])
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("the fleet fetched the cold robots.txt %d times, want once; output:\n%s\n%s", n, pa.out, pb.out)
	}
}

// TestE2EExplainAndCheckShowThePause: an origin paused by a 429 with
// Retry-After: 120 (beyond pacing.max_wait) is shown paused, with the
// answer that paused it, by the proxy's /explain and by robotsgate check
// run beside it on the same Redis, which both say a request now is
// refused; /explain also says what the interval is made of.
func TestE2EExplainAndCheckShowThePause(t *testing.T) {
	redis := redistest.Start(t)
	o := startScriptedOrigin(t, "User-agent: *\nCrawl-delay: 0.5\n", func(n int64, w http.ResponseWriter) int {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
		return http.StatusTooManyRequests
	})
	dir := t.TempDir()
	cfg := fleetConfig(t, dir, redis.Addr, "refuse")
	p := startServe(t, dir, "-config", cfg, "-admin-listen", "127.0.0.1:0")
	if r := get(t, proxyClient(t, p.addr, ""), o.URL+"/first"); r.status != 429 {
		t.Fatalf("first request: %d", r.status)
	}
	code, body := adminStatus(t, adminOf(t, p)+"/explain?url="+url.QueryEscape(o.URL+"/next")+"&agent=bot")
	var e struct {
		Backoff *struct {
			Cause     string  `json:"cause"`
			Remaining float64 `json:"remaining_seconds"`
			Refuses   bool    `json:"refuses"`
		} `json:"backoff"`
		Causes *struct {
			Robots float64 `json:"robots_seconds"`
		} `json:"interval_causes"`
	}
	if err := json.Unmarshal([]byte(body), &e); code != 200 || err != nil {
		t.Fatalf("/explain: %d %v %s", code, err, body)
	}
	if e.Backoff == nil || !strings.Contains(e.Backoff.Cause, "the origin answered 429 with Retry-After: 120") ||
		e.Backoff.Remaining < 100 || !e.Backoff.Refuses || e.Causes == nil || e.Causes.Robots != 0.5 {
		t.Errorf("/explain: %s", body)
	}
	stdout, stderr, code := runBin(t, dir, "check", "-config", cfg, "-agent", "bot", o.URL+"/next")
	if code != 0 || !strings.Contains(stdout, "origin paused until") || !strings.Contains(stdout, "Retry-After: 120") ||
		!strings.Contains(stdout, "is refused (origin-backoff)") {
		t.Errorf("check: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestE2EFleetKeepsMaxConcurrencyAcrossInstances: two instances on one
// Redis with pacing.max_concurrency 1; four clients on each hammer an
// origin whose answers take 200 ms for 2 s: the origin never has more
// than one request of theirs at a time (each instance alone would allow
// one, two together).
func TestE2EFleetKeepsMaxConcurrencyAcrossInstances(t *testing.T) {
	redis := redistest.Start(t)
	var inFlight, most atomic.Int64
	o := startScriptedOrigin(t, "User-agent: *\nAllow: /\n", func(int64, http.ResponseWriter) int {
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(200 * time.Millisecond) // the origin's work: requests overlap if let through together
		inFlight.Add(-1)
		return http.StatusOK
	})
	dir := t.TempDir()
	cfg := fleetConfig(t, dir, redis.Addr, "refuse")
	writeFile(t, cfg, readText(t, cfg)+"  max_concurrency: 1\n")
	a, b := startServe(t, t.TempDir(), "-config", cfg), startServe(t, t.TempDir(), "-config", cfg)
	var wg sync.WaitGroup
	var served atomic.Int64
	for _, p := range []*proc{a, b} {
		wg.Go(func() {
			for _, r := range hammer(proxyClient(t, p.addr, ""), o.URL, 4, 2*time.Second) {
				if r.status == 200 {
					served.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Errorf("the origin had %d requests at once, want at most pacing.max_concurrency 1 across the fleet", m)
	}
	if served.Load() < 5 {
		t.Errorf("only %d requests served in 2 s", served.Load())
	}
}
