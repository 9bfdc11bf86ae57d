//go:build unix

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/internal/redistest"
)

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
	login := fmt.Sprintf("    username: robotsgate\n    password_file: %q\n", filepath.Join(dir, "redis-password"))
	cfgA := haConfig(t, dir, "cluster-a", fmt.Sprintf("    cluster: {addrs: [%s]}\n", nodes[0].Addr)+login)
	cfgB := haConfig(t, dir, "cluster-b", fmt.Sprintf("    cluster: {addrs: [%s]}\n", nodes[2].Addr)+login)
	// A state directory each (one instance per state directory).
	a, b := startServe(t, t.TempDir(), "-config", cfgA), startServe(t, t.TempDir(), "-config", cfgB)
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
	c := startServe(t, t.TempDir(), "-config", cfgA)
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
