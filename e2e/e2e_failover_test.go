//go:build unix

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/robotsgate/robotsgate/internal/redistest"
)

// haOrigin serves robots.txt (counting the fetches) and records when each
// page request arrives.
type haOrigin struct {
	*httptest.Server
	robots atomic.Int64
	mu     sync.Mutex
	pages  []time.Time
}

func startHAOrigin(t *testing.T, robotsTxt string) *haOrigin {
	t.Helper()
	o := &haOrigin{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			o.robots.Add(1)
			io.WriteString(w, robotsTxt)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/page") {
			o.mu.Lock()
			o.pages = append(o.pages, time.Now())
			o.mu.Unlock()
		}
		io.WriteString(w, "page")
	}))
	t.Cleanup(o.Close)
	return o
}

// failoverJitter is how much closer than the Crawl-delay two requests may
// reach the origin in these tests: arrivalJitter's work of the origin
// before its handler runs, plus the lateness of a timer on a loaded 2-core
// machine (a request 46 ms late was seen at a load average of 10, beyond
// what the 5 ms padding absorbs; these tests pace many more requests than
// TestE2EFleetSharesCrawlDelayThroughRedis). A failover that loses a slot,
// or lets requests through unpaced, brings two requests a few
// milliseconds apart: far closer than the Crawl-delay less this.
const failoverJitter = 100 * time.Millisecond

// checkGaps fails t for every two page requests that reached the origin
// closer than delay, less failoverJitter, and returns how many there
// were.
func (o *haOrigin) checkGaps(t *testing.T, delay time.Duration) int {
	t.Helper()
	o.mu.Lock()
	ts := slices.Clone(o.pages)
	o.mu.Unlock()
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(ts); i++ {
		if gap := ts[i].Sub(ts[i-1]); gap < delay-failoverJitter {
			t.Errorf("page requests %d and %d reached the origin %v apart, less than the Crawl-delay %v (at %s)",
				i-1, i, gap.Round(time.Microsecond), delay, ts[i].Format("15:04:05.000"))
		}
	}
	return len(ts)
}

// haConfig writes a fleet configuration whose pacing.redis section is
// redisYAML (indented under redis:) and returns its path.
func haConfig(t *testing.T, dir, name, redisYAML string) string {
	t.Helper()
	path := filepath.Join(dir, name+".yaml")
	writeFile(t, path, fmt.Sprintf(`listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
robots:
  fetch_timeout: 5s
egress:
  allow_networks: [127.0.0.1/32]
mitm:
  ca_cert: %q
  ca_key: %q
pacing:
  max_wait: 10s
  store: redis
  on_store_error: refuse
  redis:
%s`, filepath.Join(dir, "certs", "ca.pem"), filepath.Join(dir, "certs", "ca-key.pem"), redisYAML))
	return path
}

// fleetACL returns the ACL SETUSER command of docs/fleet.md for user with
// password put in, as arguments.
func fleetACL(t *testing.T, user, password string) []any {
	t.Helper()
	line := regexp.MustCompile(`(?m)^ACL SETUSER ` + regexp.QuoteMeta(user) + ` .*$`).FindString(readText(t, "../docs/fleet.md"))
	if line == "" {
		t.Fatalf("docs/fleet.md has no line starting ACL SETUSER %s", user)
	}
	var args []any
	for _, f := range strings.Fields(line) {
		if strings.HasPrefix(f, ">") {
			f = ">" + password
		}
		args = append(args, f)
	}
	return args
}

// setACL runs docs/fleet.md's ACL SETUSER for user on each server (a
// Redis node or a sentinel: ACLs are not shared between them).
func setACL(t *testing.T, user, password string, clients ...interface {
	Process(context.Context, redis.Cmder) error
	Close() error
}) {
	t.Helper()
	for _, c := range clients {
		cmd := redis.NewCmd(context.Background(), fleetACL(t, user, password)...)
		if err := c.Process(context.Background(), cmd); err != nil {
			t.Fatalf("docs/fleet.md's ACL for %s: %v", user, err)
		}
		c.Close()
	}
}

// outcome is one paced request's answer and when it came.
type outcome struct {
	through  int // the instance
	at       time.Time
	status   int
	decision string
	err      error
}

// crawl sends paced requests ("bot") to o through each client, workers at
// a time per client, one after another, until stop is closed, and returns
// every outcome. A refused request is followed by the next after 50 ms,
// as a crawler would retry.
func crawl(clients []*http.Client, o *haOrigin, workers int, stop <-chan struct{}, seen func(outcome)) []outcome {
	var mu sync.Mutex
	var out []outcome
	var seq atomic.Int64
	var wg sync.WaitGroup
	for i, c := range clients {
		for range workers {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					r, err := getAs(c, fmt.Sprintf("%s/page-%d", o.URL, seq.Add(1)), "bot")
					oc := outcome{through: i, at: time.Now(), status: r.status, err: err}
					if err == nil {
						oc.decision = r.header.Get("X-Robotsgate-Decision")
					}
					mu.Lock()
					out = append(out, oc)
					mu.Unlock()
					seen(oc)
					if err != nil || r.status != 200 {
						time.Sleep(50 * time.Millisecond) // a crawler's retry delay, not synchronisation
					}
				}
			})
		}
	}
	wg.Wait()
	return out
}

// labelled reports whether an admin listener's /metrics has the series
// (name and labels) with value 1.
func labelled(t *testing.T, admin, series string) bool {
	_, body := adminStatus(t, admin+"/metrics")
	return slices.Contains(strings.Split(body, "\n"), series+" 1")
}

// TestE2EFleetSurvivesASentinelFailover: a primary, a replica and three
// sentinels; two robotsgate instances pace one origin with Crawl-delay
// 0.5 through them, two crawlers each, while another origin is paused by
// a 429 with Retry-After: 120. The primary is killed mid-run. The paced
// origin never sees two requests closer than the Crawl-delay across the
// failover: meanwhile requests are refused (503 pacing-unavailable, the
// on_store_error: refuse policy), and both instances resume on the
// promoted replica by themselves. Both report the failover in /metrics and
// /readyz. A third instance started after it reads the pause and the
// robots.txt from the promoted replica: the paused origin is not asked
// again, and robots.txt was fetched once.
func TestE2EFleetSurvivesASentinelFailover(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	sentinels := redistest.StartSentinels(t, primary, 3, redistest.SentinelOptions{Master: "fleet", DownAfter: 1500 * time.Millisecond})
	var addrs []string
	for _, s := range sentinels {
		addrs = append(addrs, s.Addr)
	}
	const delay = 500 * time.Millisecond
	paced := startHAOrigin(t, fmt.Sprintf(fleetRobots, "0.5"))
	paused := startScriptedOrigin(t, "User-agent: *\nAllow: /\n", func(n int64, w http.ResponseWriter) int {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
		return http.StatusTooManyRequests
	})
	// robotsgate logs in as docs/fleet.md's users: on the data nodes
	// (both: ACLs are not replicated) and on the sentinels.
	setACL(t, "robotsgate", "fleet-secret", primary.Client(), replica.Client())
	setACL(t, "robotsgate-sentinel", "watch-secret", sentinels[0].Client(), sentinels[1].Client(), sentinels[2].Client())
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "redis-password"), "fleet-secret\n")
	writeFile(t, filepath.Join(dir, "sentinel-password"), "watch-secret\n")
	cfg := haConfig(t, dir, "sentinel", fmt.Sprintf("    sentinel:\n      master_name: fleet\n      addrs: [%s]\n"+
		"      username: robotsgate-sentinel\n      password_file: %q\n"+
		"    username: robotsgate\n    password_file: %q\n", strings.Join(addrs, ", "),
		filepath.Join(dir, "sentinel-password"), filepath.Join(dir, "redis-password")))
	// A state directory each (one instance per state directory).
	a, b := startServe(t, t.TempDir(), "-config", cfg), startServe(t, t.TempDir(), "-config", cfg)
	clients := []*http.Client{proxyClient(t, a.addr, ""), proxyClient(t, b.addr, "")}
	admins := []string{adminOf(t, a), adminOf(t, b)}
	warmUp(t, &pacedOrigin{Server: paced.Server}, clients...)

	if r := get(t, clients[0], paused.URL+"/first"); r.status != 429 {
		t.Fatalf("the paused origin's first answer: %d", r.status)
	}
	for deadline := time.Now().Add(10 * time.Second); metricValue(t, admins[1], "robotsgate_origins_in_backoff") != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the second instance never counted the origin as paused; output:\n%s", b.out)
		}
	}

	watch := sentinels[0].WatchSwitch()
	var switched atomic.Pointer[time.Time]
	var before, after [2]atomic.Int64 // 200s through each instance before the kill, after the switch
	stop, killed := make(chan struct{}), make(chan struct{})
	var killOnce sync.Once
	seen := func(oc outcome) {
		if oc.err != nil || oc.status != 200 {
			return
		}
		if sw := switched.Load(); sw != nil && oc.at.After(*sw) {
			after[oc.through].Add(1)
		} else if n := before[oc.through].Add(1); before[0].Load() >= 3 && before[1].Load() >= 3 && n >= 3 {
			killOnce.Do(func() { close(killed) })
		}
	}
	var outcomes []outcome
	crawled := make(chan struct{})
	go func() {
		defer close(crawled)
		outcomes = crawl(clients, paced, 2, stop, seen)
	}()
	select { // both instances pace through the primary first
	case <-killed:
	case <-time.After(60 * time.Second):
		close(stop)
		<-crawled
		t.Fatalf("the instances did not serve 3 paced requests each in 60 s: %d and %d", before[0].Load(), before[1].Load())
	}
	primary.Kill()
	to := watch.Wait(t, 60*time.Second)
	now := time.Now()
	switched.Store(&now)
	if to != replica.Addr {
		t.Errorf("+switch-master to %s, want the replica %s", to, replica.Addr)
	}
	deadline := time.Now().Add(60 * time.Second)
	for after[0].Load() < 3 || after[1].Load() < 3 { // both resume by themselves
		if time.Now().After(deadline) {
			close(stop)
			<-crawled
			t.Fatalf("after the failover the instances served %d and %d paced requests in 60 s, want 3 each; output:\n%s\n%s",
				after[0].Load(), after[1].Load(), a.out, b.out)
		}
		time.Sleep(50 * time.Millisecond) // polling counters the crawlers update
	}
	close(stop)
	<-crawled

	var refused int
	for _, oc := range outcomes {
		switch {
		case oc.err != nil:
			t.Errorf("a paced request through instance %d failed: %v", oc.through, oc.err)
		case oc.status == 503 && oc.decision == "pacing-unavailable":
			refused++
		case oc.status != 200:
			t.Errorf("a paced request through instance %d: %d %s", oc.through, oc.status, oc.decision)
		}
	}
	if refused == 0 {
		t.Errorf("no request was refused during the failover (%d requests): were they sent unpaced?", len(outcomes))
	}
	for i, admin := range admins {
		if v := metricValue(t, admin, "robotsgate_redis_failovers_total"); v != 1 {
			t.Errorf("instance %d: robotsgate_redis_failovers_total %v, want 1", i, v)
		}
		if v := metricValue(t, admin, "robotsgate_redis_last_failover_timestamp_seconds"); v < float64(now.Add(-time.Minute).Unix()) {
			t.Errorf("instance %d: robotsgate_redis_last_failover_timestamp_seconds %v", i, v)
		}
		if series := fmt.Sprintf(`robotsgate_redis_node_info{mode="sentinel",node=%q}`, replica.Addr); !labelled(t, admin, series) {
			t.Errorf("instance %d: no %s 1 in /metrics", i, series)
		}
		code, body := adminStatus(t, admin+"/readyz")
		if want := fmt.Sprintf("at %s; failed over 1 time(s), last at ", replica.Addr); code != 200 || !strings.HasPrefix(body, "ready\n") ||
			!strings.Contains(body, want) || !strings.Contains(body, "from "+primary.Addr+" to "+replica.Addr) {
			t.Errorf("instance %d: /readyz %d %q", i, code, body)
		}
	}

	// A third instance, started on the promoted replica: the pause and
	// the robots.txt record are there.
	c := startServe(t, t.TempDir(), "-config", cfg)
	cc := proxyClient(t, c.addr, "")
	if r := get(t, cc, paused.URL+"/third"); r.status != 429 || r.header.Get("X-Robotsgate-Decision") != "origin-backoff" {
		t.Errorf("the paused origin through an instance started after the failover: %d %q, want 429 origin-backoff",
			r.status, r.header.Get("X-Robotsgate-Decision"))
	}
	if n := len(paused.snapshot()); n != 1 {
		t.Errorf("the paused origin was asked %d times, want once (its 429)", n)
	}
	if r := get(t, cc, paced.URL+"/page-third"); r.status != 200 {
		t.Errorf("a paced request through the third instance: %d %s", r.status, r.body)
	}
	if n := paced.robots.Load(); n != 1 {
		t.Errorf("the fleet fetched the paced origin's robots.txt %d times, want once: its record survives the failover", n)
	}
	n := paced.checkGaps(t, delay)
	t.Logf("%d paced requests reached the origin, %d were refused during the failover", n, refused)
	for i, p := range []*proc{a, b, c} {
		if p.exited() || strings.Contains(p.out.String(), "panic") {
			t.Errorf("instance %d did not survive the failover:\n%s", i, p.out)
		}
	}
}
