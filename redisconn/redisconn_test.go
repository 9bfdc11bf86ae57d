package redisconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/robotsgate/robotsgate/internal/redistest"
)

// TestMain silences go-redis' own log: the tests kill servers on purpose.
func TestMain(m *testing.M) {
	redistest.Quiet()
	os.Exit(m.Run())
}

// Open takes exactly one kind of Redis, complete.
func TestOpenWantsOneKindOfRedis(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		err  string
	}{
		{"nothing", Options{}, "want exactly one of an address, sentinels and cluster seeds, got 0"},
		{"server and cluster", Options{Addr: "127.0.0.1:1", Cluster: []string{"127.0.0.1:2"}}, "got 2"},
		{"sentinel without a master", Options{Sentinel: &Sentinel{Addrs: []string{"127.0.0.1:1"}}}, "a master name and at least one sentinel address"},
		{"cluster with a database", Options{Cluster: []string{"127.0.0.1:2"}, DB: 1}, "only database 0"},
	} {
		if _, err := Open(tc.opts); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}

// waitFor polls cond every 20 ms until it holds, failing t after timeout.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond) // polling a state that has no event of its own
	}
}

// acks is WriteNode's count for key.
func acks(t *testing.T, c *Conn, key string) int {
	t.Helper()
	_, n, err := c.WriteNode(context.Background(), key)
	if err != nil {
		t.Fatalf("WriteNode(%q): %v", key, err)
	}
	return n
}

// A single server: its address is the node, and writes never wait for
// replicas (nothing fails over).
func TestServerStatus(t *testing.T) {
	srv := redistest.Start(t)
	c, err := Open(Options{Addr: srv.Addr, ReplicaAcks: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if st := c.Status(); st.Mode != ModeServer || len(st.Nodes) != 1 || st.Nodes[0] != srv.Addr || st.String() != "redis: server at "+srv.Addr {
		t.Errorf("status %+v %q", st, st)
	}
	if n := acks(t, c, "k"); n != 0 {
		t.Errorf("a single server's write waits for %d replicas", n)
	}
}

// Sentinel: the instance reports the primary it writes to, waits for the
// replica's acknowledgement while the replica could be promoted; when the
// primary is killed and Sentinel promotes the replica, the client goes to
// it by itself, the move is reported as a failover from the old primary
// to the new one, and writes no longer wait for a replica (the old
// primary, down, cannot be promoted).
func TestSentinelFailoverIsFollowedAndReported(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	sentinels := redistest.StartSentinels(t, primary, 3, redistest.SentinelOptions{Master: "fleet"})
	var addrs []string
	for _, s := range sentinels {
		addrs = append(addrs, s.Addr)
	}
	c, err := Open(Options{Sentinel: &Sentinel{Master: "fleet", Addrs: addrs}, ReplicaAcks: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Client().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through sentinel: %v", err)
	}
	if st := c.Status(); len(st.Nodes) != 1 || st.Nodes[0] != primary.Addr || st.Failovers != 0 {
		t.Errorf("before the failover: %+v, want the primary %s", st, primary.Addr)
	}
	waitFor(t, "a write waits for the replica", 10*time.Second, func() bool { return acks(t, c, "k") == 1 })

	watch := sentinels[0].WatchSwitch()
	start := time.Now()
	primary.Kill()
	if to := watch.Wait(t, 60*time.Second); to != replica.Addr {
		t.Fatalf("+switch-master to %s, want the replica %s", to, replica.Addr)
	}
	waitFor(t, "the client writes to the promoted replica", 30*time.Second, func() bool {
		return c.Client().Set(ctx, "k", "w", 0).Err() == nil
	})
	st := c.Status()
	if len(st.Nodes) != 1 || st.Nodes[0] != replica.Addr || st.Failovers != 1 ||
		st.Last.From != primary.Addr || st.Last.To != replica.Addr || st.Last.At.Before(start) {
		t.Errorf("after the failover: %+v", st)
	}
	if !strings.Contains(st.String(), "failed over 1 time(s), last at ") || !strings.Contains(st.String(), "from "+primary.Addr+" to "+replica.Addr) {
		t.Errorf("status line %q", st)
	}
	waitFor(t, "a write on the promoted replica waits for no replica", 30*time.Second, func() bool { return acks(t, c, "k") == 0 })
}

// Cluster: the primaries are the nodes, and a key's write goes to its
// slot's primary; with no replicas it waits for none.
func TestClusterStatus(t *testing.T) {
	nodes := redistest.StartCluster(t, 3)
	c, err := Open(Options{Cluster: []string{nodes[1].Addr}, ReplicaAcks: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, "the cluster's primaries are read", 10*time.Second, func() bool { return len(c.Status().Nodes) == 3 })
	for _, n := range nodes {
		if !strings.Contains(c.Status().String(), n.Addr) {
			t.Errorf("status %q lacks %s", c.Status(), n.Addr)
		}
	}
	ctx := context.Background()
	for _, key := range []string{"{a}x", "{b}y", "{c}z"} {
		node, n, err := c.WriteNode(ctx, key)
		if err != nil || n != 0 {
			t.Fatalf("WriteNode(%q): %d, %v", key, n, err)
		}
		slot, err := node.(*redis.Client).ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		// The node owns the key's slot: it takes the write without MOVED.
		if err := node.Set(ctx, key, slot, 0).Err(); err != nil {
			t.Errorf("SET %q on its primary: %v", key, err)
		}
	}
}

// Only the replicas Sentinel could promote count: not those it sees down
// or cannot reach, nor those of replica priority 0.
func TestPromotableReplicas(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas []map[string]string
		want     int
	}{
		{"none", nil, 0},
		{"one up", []map[string]string{{"flags": "slave", "slave-priority": "100"}}, 1},
		{"down, objectively down, unreachable", []map[string]string{{"flags": "s_down,slave"}, {"flags": "o_down,s_down,slave"}, {"flags": "slave,disconnected"}}, 0},
		{"priority 0 is never promoted", []map[string]string{{"flags": "slave", "slave-priority": "0"}, {"flags": "slave", "slave-priority": "1"}}, 1},
	} {
		if got := promotable(tc.replicas); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// tlsTo trusts the CA of srv, for whatever host is dialled (ServerName
// left empty, as pacing.redis.tls makes it for Sentinel and Cluster).
func tlsTo(t *testing.T, srv *redistest.Server) *tls.Config {
	t.Helper()
	c := srv.ClientTLS()
	c.ServerName = ""
	return c
}

// Over TLS, Sentinel and a Cluster: the sentinels and every data node are
// reached with TLS, each certificate verified for the host it is dialled
// at; a CA that did not sign them is refused.
func TestTLSToSentinelsAndClusterNodes(t *testing.T) {
	ctx := context.Background()
	t.Run("sentinel", func(t *testing.T) {
		primary := redistest.StartWith(t, redistest.Options{TLS: true})
		redistest.StartReplica(t, primary)
		sentinels := redistest.StartSentinels(t, primary, 1, redistest.SentinelOptions{Master: "tls", DownAfter: 10 * time.Second})
		c, err := Open(Options{Sentinel: &Sentinel{Master: "tls", Addrs: []string{sentinels[0].Addr}}, TLS: tlsTo(t, primary), ReplicaAcks: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Client().Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatalf("SET through sentinels over TLS: %v", err)
		}
		if st := c.Status(); len(st.Nodes) != 1 || st.Nodes[0] != primary.Addr {
			t.Errorf("status %+v, want the primary %s", st, primary.Addr)
		}
		waitFor(t, "the sentinel is read over TLS", 10*time.Second, func() bool { return acks(t, c, "k") == 1 })
		wrong, err := Open(Options{Sentinel: &Sentinel{Master: "tls", Addrs: []string{sentinels[0].Addr}},
			TLS: &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}})
		if err != nil {
			t.Fatal(err)
		}
		defer wrong.Close()
		if err := wrong.Client().Set(ctx, "k", "v", 0).Err(); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("a CA that signed nothing: %v, want a certificate error", err)
		}
	})
	t.Run("cluster", func(t *testing.T) {
		nodes := redistest.StartClusterWith(t, 3, true)
		c, err := Open(Options{Cluster: []string{nodes[0].Addr}, TLS: tlsTo(t, nodes[0])})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, key := range []string{"{a}", "{b}", "{c}", "{d}"} {
			if err := c.Client().Set(ctx, key, "v", 0).Err(); err != nil {
				t.Fatalf("SET %s on a cluster over TLS: %v", key, err)
			}
		}
		waitFor(t, "the three primaries are read over TLS", 10*time.Second, func() bool { return len(c.Status().Nodes) == 3 })
	})
}
