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
		"      username: robotsgate-sentinel\n      password_file: sentinel-password\n"+
		"    username: robotsgate\n    password_file: redis-password\n", strings.Join(addrs, ", ")))
	a, b := startServe(t, dir, "-config", cfg), startServe(t, dir, "-config", cfg)
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
	c := startServe(t, dir, "-config", cfg)
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

// TestE2EFleetOnARedisCluster: two robotsgate instances on a three-node
// Redis Cluster (no failover), seeded with one node each: nine concurrent
// requests through both reach the origin at least the Crawl-delay apart;
// a cold robots.txt is fetched once by the fleet; a 429 seen by one
// instance pauses the other; every key of one origin lies in one hash
// slot, and the origins spread over the nodes; /metrics and /readyz name
// the three primaries.
func TestE2EFleetOnARedisCluster(t *testing.T) {
	nodes := redistest.StartCluster(t, 3)
	const delay = 500 * time.Millisecond
	paced := startHAOrigin(t, fmt.Sprintf(fleetRobots, "0.5"))
	setACL(t, "robotsgate", "fleet-secret", nodes[0].Client(), nodes[1].Client(), nodes[2].Client()) // docs/fleet.md's, on every node
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "redis-password"), "fleet-secret\n")
	login := "    username: robotsgate\n    password_file: redis-password\n"
	cfgA := haConfig(t, dir, "cluster-a", fmt.Sprintf("    cluster: {addrs: [%s]}\n", nodes[0].Addr)+login)
	cfgB := haConfig(t, dir, "cluster-b", fmt.Sprintf("    cluster: {addrs: [%s]}\n", nodes[2].Addr)+login)
	a, b := startServe(t, dir, "-config", cfgA), startServe(t, dir, "-config", cfgB)
	clients := []*http.Client{proxyClient(t, a.addr, ""), proxyClient(t, b.addr, "")}
	admins := []string{adminOf(t, a), adminOf(t, b)}

	rs, errs := concurrently(func() (response, error) { return getAs(clients[0], paced.URL+"/warmup0", "warmup") },
		func() (response, error) { return getAs(clients[1], paced.URL+"/warmup1", "warmup") })
	for i := range rs {
		if errs[i] != nil || rs[i].status != 200 {
			t.Fatalf("warm-up through instance %d: %d %v", i, rs[i].status, errs[i])
		}
	}
	if n := paced.robots.Load(); n != 1 {
		t.Errorf("two instances asked for a cold origin at once fetched its robots.txt %d times, want once", n)
	}
	var wg sync.WaitGroup
	for i := range 9 {
		wg.Go(func() {
			r, err := getAs(clients[i%2], fmt.Sprintf("%s/page%d", paced.URL, i), "bot")
			if err != nil || r.status != 200 {
				t.Errorf("request %d through instance %d: %d %s %v", i, i%2, r.status, r.body, err)
			}
		})
	}
	wg.Wait()
	if n := paced.checkGaps(t, delay); n != 9 {
		t.Errorf("the origin saw %d paced requests, want 9", n)
	}

	// An origin paused on each node: the other instance, and a third one
	// started later (which reads every node's pauses), refuse them all.
	paused := pausedOnEveryNode(t, nodes)
	for _, o := range paused {
		if r := get(t, clients[0], o.URL+"/first"); r.status != 429 {
			t.Fatalf("the paused origin's first answer: %d", r.status)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); metricValue(t, admins[1], "robotsgate_origins_in_backoff") != float64(len(paused)); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the second instance never counted the origins as paused; output:\n%s", b.out)
		}
	}
	c := startServe(t, dir, "-config", cfgA)
	for _, o := range paused {
		for i, cl := range []*http.Client{clients[1], proxyClient(t, c.addr, "")} {
			if r := get(t, cl, o.URL+"/again"); r.status != 429 || r.header.Get("X-Robotsgate-Decision") != "origin-backoff" {
				t.Errorf("the paused origin %s through instance %d: %d %q", o.URL, i+1, r.status, r.header.Get("X-Robotsgate-Decision"))
			}
		}
		if n := len(o.snapshot()); n != 1 {
			t.Errorf("the paused origin %s was asked %d times, want once", o.URL, n)
		}
	}

	ctx := context.Background()
	slotOf := map[string]int64{} // hash tag -> slot
	var keys int
	for _, n := range nodes {
		rc := n.Client()
		ks, err := rc.Keys(ctx, "robotsgate:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			open, close := strings.IndexByte(k, '{'), strings.IndexByte(k, '}')
			if open < 0 || close < open {
				t.Errorf("key %q has no hash tag", k)
				continue
			}
			tag := k[open+1 : close]
			slot, err := rc.ClusterKeySlot(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if s, ok := slotOf[tag]; ok && s != slot {
				t.Errorf("key %q in slot %d, another key of %s in slot %d", k, slot, tag, s)
			}
			slotOf[tag] = slot
			keys++
		}
		rc.Close()
	}
	for _, o := range append([]*scriptedOrigin{{Server: paced.Server}}, paused...) {
		if _, ok := slotOf[o.URL]; !ok {
			t.Errorf("no key tagged {%s} in the cluster (%d keys)", o.URL, keys)
		}
	}
	for i, admin := range admins {
		code, body := adminStatus(t, admin+"/readyz")
		for _, n := range nodes {
			if series := fmt.Sprintf(`robotsgate_redis_node_info{mode="cluster",node=%q}`, n.Addr); !labelled(t, admin, series) {
				t.Errorf("instance %d: no %s 1 in /metrics", i, series)
			}
			if !strings.Contains(body, n.Addr) {
				t.Errorf("instance %d: /readyz %q does not name %s", i, body, n.Addr)
			}
		}
		if code != 200 || !strings.HasPrefix(body, "ready\nredis: cluster primaries at ") {
			t.Errorf("instance %d: /readyz %d %q", i, code, body)
		}
		if v := metricValue(t, admin, "robotsgate_redis_failovers_total"); v != 0 {
			t.Errorf("instance %d: robotsgate_redis_failovers_total %v, want 0", i, v)
		}
	}
}

// pausedOnEveryNode starts origins answering every page with 429 and
// Retry-After: 120 until one's keys (tagged with its origin) lie on each
// of the cluster's nodes, which StartCluster gave equal ranges of slots
// in order; it gives up after 200 origins.
func pausedOnEveryNode(t *testing.T, nodes []*redistest.Server) []*scriptedOrigin {
	t.Helper()
	rc := nodes[0].Client()
	defer rc.Close()
	found := make([]*scriptedOrigin, len(nodes))
	for tries, left := 0, len(nodes); left > 0; tries++ {
		if tries == 200 {
			t.Fatalf("200 origins and none on some node")
		}
		o := startScriptedOrigin(t, "User-agent: *\nAllow: /\n", func(n int64, w http.ResponseWriter) int {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusTooManyRequests)
			return http.StatusTooManyRequests
		})
		slot, err := rc.ClusterKeySlot(context.Background(), "{"+o.URL+"}").Result()
		if err != nil {
			t.Fatal(err)
		}
		if i := int(slot) * len(nodes) / 16384; found[i] == nil {
			found[i] = o
			left--
		}
	}
	return found
}
