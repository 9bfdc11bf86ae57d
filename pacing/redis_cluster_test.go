package pacing

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/robotsgate/robotsgate/internal/redistest"
	"github.com/robotsgate/robotsgate/redisconn"
)

// clusterStore is a Redis store on a three-node Redis Cluster, through a
// connection seeded with one node.
func clusterStore(t *testing.T) (*Redis, []*redistest.Server) {
	t.Helper()
	nodes := redistest.StartCluster(t, 3)
	conn, err := redisconn.Open(redisconn.Options{Cluster: []string{nodes[0].Addr}, ReplicaAcks: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	r, err := NewRedis(RedisOptions{Conn: conn})
	if err != nil {
		t.Fatal(err)
	}
	return r, nodes
}

// On a Redis Cluster every key of an origin (its schedules by group, its
// pause, its concurrency permits) lies in the origin's hash slot, on one
// node, while different origins spread over the nodes; a governor that
// starts reads the pauses of every node, not only one.
func TestRedisClusterKeepsAnOriginsKeysInOneSlot(t *testing.T) {
	r, nodes := clusterStore(t)
	ctx := context.Background()
	params := testBackoff()
	writer := NewGovernor(params, AdaptiveParams{}, GovernorOptions{Shared: r.GovernorShared(), Jitter: func() float64 { return 0 }})
	var origins []string
	for i := range 24 {
		// Names that differ in more than a digit: CRC16 (the slot) of
		// names one digit apart lands in few slots.
		o := fmt.Sprintf("https://site%d.example:443", i*7919)
		origins = append(origins, o)
		for _, key := range []string{o + " *", o + " Googlebot", o} {
			if res, err := r.Reserve(ctx, key, time.Minute, time.Hour); err != nil || !res.Granted {
				t.Fatalf("reserve %q: %+v %v", key, res, err)
			}
		}
		if _, ok, err := r.TryTake(ctx, o, 2, time.Minute); err != nil || !ok {
			t.Fatalf("permit of %s: %v %v", o, ok, err)
		}
		if _, paused := writer.Observe(ctx, o, Answer{Status: 429, RetryAfter: "60", At: time.Now()}); !paused {
			t.Fatalf("%s not paused", o)
		}
	}
	slots := map[string]int64{}     // origin -> its keys' slot
	perNode := map[string]int{}     // node -> origins with keys on it
	keysOf := map[string][]string{} // origin -> its keys
	for _, n := range nodes {
		c := n.Client()
		keys, err := c.Keys(ctx, DefaultRedisKeyPrefix+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, k := range keys {
			rest := strings.TrimPrefix(k, DefaultRedisKeyPrefix)
			rest = strings.TrimPrefix(strings.TrimPrefix(rest, pauseKeyPrefix), concKeyPrefix)
			o := originOf(rest)
			slot, err := c.ClusterKeySlot(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if s, ok := slots[o]; ok && s != slot {
				t.Errorf("%s: key %q in slot %d, another of its keys in slot %d", o, k, slot, s)
			}
			slots[o] = slot
			keysOf[o] = append(keysOf[o], k)
			if !seen[o] {
				seen[o] = true
				perNode[n.Addr]++
			}
		}
		c.Close()
	}
	for _, o := range origins {
		if len(keysOf[o]) != 5 { // three schedules, a pause, a permit set
			t.Errorf("%s: keys %q, want 5", o, keysOf[o])
		}
	}
	if len(perNode) != 3 {
		t.Errorf("24 origins on %d of the 3 nodes: %v", len(perNode), perNode)
	}
	if total := perNode[nodes[0].Addr] + perNode[nodes[1].Addr] + perNode[nodes[2].Addr]; total != len(origins) {
		t.Errorf("%d origins counted on the nodes, want each on one node: %v", total, perNode)
	}

	late := NewGovernor(params, AdaptiveParams{}, GovernorOptions{Shared: r.GovernorShared(), Jitter: func() float64 { return 0 }})
	fctx, cancel := context.WithCancel(ctx)
	done, ready := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		r.Follow(fctx, late, func() { close(ready) })
	}()
	defer func() { cancel(); <-done }()
	<-ready
	for _, o := range origins {
		if p, ok := late.Paused(o); !ok || p.Status != 429 {
			t.Errorf("an instance that starts does not read %s's pause from its node: %+v %v", o, p, ok)
		}
	}
	if err := r.Healthy(ctx); err != nil {
		t.Errorf("Healthy: %v", err)
	}
	var _ redis.UniversalClient = r.client
}
