package redistest

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// StartCluster starts n redis-servers with --cluster-enabled, gives each
// an equal share of the hash slots (CLUSTER ADDSLOTSRANGE), joins them
// (CLUSTER MEET) and waits, bounded, until every node says cluster_state:ok
// and knows all n. No replicas: a cluster that does not fail over.
func StartCluster(tb testing.TB, n int) []*Server {
	tb.Helper()
	return StartClusterWith(tb, n, false)
}

// StartClusterWith is StartCluster, with useTLS serving TLS only (clients
// and the cluster bus), every node with the first one's certificate.
func StartClusterWith(tb testing.TB, n int, useTLS bool) []*Server {
	tb.Helper()
	nodes := make([]*Server, n)
	bus := make([]int, n)
	for i := range nodes {
		// The cluster bus gets a free port of its own: by default it is
		// the port + 10000, which may be taken, or beyond 65535.
		bus[i] = freePort(tb)
		opts := Options{Args: []string{"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000",
			"--cluster-port", strconv.Itoa(bus[i])}}
		if useTLS {
			opts.TLS, opts.Args = true, append(opts.Args, "--tls-cluster", "yes")
			if i > 0 {
				opts.ShareTLS = nodes[0]
			}
		}
		nodes[i] = StartWith(tb, opts)
	}
	ctx := context.Background()
	for i, s := range nodes {
		c := s.Client()
		first, last := i*clusterSlots/n, (i+1)*clusterSlots/n-1
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", first, last).Err(); err != nil {
			tb.Fatalf("CLUSTER ADDSLOTSRANGE %d %d on %s: %v", first, last, s.Addr, err)
		}
		if i > 0 {
			host, port, _ := net.SplitHostPort(nodes[0].Addr)
			if err := c.Do(ctx, "CLUSTER", "MEET", host, port, bus[0]).Err(); err != nil {
				tb.Fatalf("CLUSTER MEET from %s: %v", s.Addr, err)
			}
		}
		c.Close()
	}
	for _, s := range nodes {
		s.waitCluster(n, 60*time.Second)
	}
	return nodes
}

// waitCluster waits, at most timeout, until the node says the cluster is
// ok and knows n nodes.
func (s *Server) waitCluster(n int, timeout time.Duration) {
	s.tb.Helper()
	c := s.Client()
	defer c.Close()
	deadline := time.Now().Add(timeout)
	for {
		info, err := c.ClusterInfo(context.Background()).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)+"\r\n") {
			return
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("cluster node %s not ok with %d nodes within %v: %v\n%s", s.Addr, n, timeout, err, info)
		}
		time.Sleep(20 * time.Millisecond) // polling CLUSTER INFO: the gossip has no event to wait for
	}
}
