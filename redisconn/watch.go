package redisconn

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// watch reads the topology at once, then every watchInterval and when
// kicked, until ctx is done: with Sentinel the replicas the sentinels
// could promote, with a Cluster the primaries of the slots and their
// replicas (a slot whose primary changed is a failover).
func (c *Conn) watch(ctx context.Context) {
	defer close(c.watched)
	var sentinels []*redis.SentinelClient
	defer func() {
		for _, s := range sentinels {
			if s != nil {
				s.Close()
			}
		}
	}()
	if c.mode == ModeSentinel {
		sentinels = make([]*redis.SentinelClient, len(c.opts.Sentinel.Addrs))
	}
	owners := map[int]string{} // Cluster: first slot of a range -> its primary
	ticker := time.NewTicker(watchInterval)
	defer ticker.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*orDefault(c.opts.ReadTimeout, DefaultReadTimeout))
		if c.mode == ModeSentinel {
			c.readSentinels(rctx, sentinels)
		} else {
			c.readCluster(rctx, owners)
		}
		cancel()
		select {
		case <-c.read:
		default:
			close(c.read)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-c.kick:
		}
	}
}

// readSentinels asks the sentinels, in turn until one answers, for the
// primary's replicas and counts those a failover could promote.
func (c *Conn) readSentinels(ctx context.Context, clients []*redis.SentinelClient) {
	s := c.opts.Sentinel
	for i, addr := range s.Addrs {
		if clients[i] == nil {
			o := c.opts.options()
			o.Addr, o.Username, o.Password, o.DB = addr, s.Username, s.Password, 0
			clients[i] = redis.NewSentinelClient(o)
		}
		replicas, err := clients[i].Replicas(ctx, s.Master).Result()
		if err != nil {
			continue
		}
		c.mu.Lock()
		c.replicas[""] = promotable(replicas)
		c.known = true
		c.mu.Unlock()
		return
	}
}

// promotable counts the replicas Sentinel could promote: not down in its
// eyes (s_down, o_down), reachable (not disconnected), and with a
// replica priority other than 0 (never promoted). Counting more than
// Sentinel would promote only makes a write wait for more.
func promotable(replicas []map[string]string) int {
	n := 0
	for _, r := range replicas {
		flags := strings.Split(r["flags"], ",")
		if slices.Contains(flags, "s_down") || slices.Contains(flags, "o_down") || slices.Contains(flags, "disconnected") {
			continue
		}
		if p, err := strconv.Atoi(r["slave-priority"]); err == nil && p == 0 {
			continue
		}
		n++
	}
	return n
}

// readCluster reads the slots' primaries and replicas (CLUSTER SLOTS lists
// no failed replica) and records a slot range whose primary changed as a
// failover.
func (c *Conn) readCluster(ctx context.Context, owners map[int]string) {
	// CLUSTER SLOTS, not CLUSTER SHARDS: go-redis routes commands by it
	// (its node addresses are these), and the ACL needs one command.
	//lint:ignore SA1019 the addresses must be those go-redis routes by
	slots, err := c.client.(*redis.ClusterClient).ClusterSlots(ctx).Result()
	if err != nil || len(slots) == 0 {
		return
	}
	replicas := map[string]int{}
	var primaries []string
	var moves []Failover
	for _, s := range slots {
		if len(s.Nodes) == 0 {
			continue
		}
		p := s.Nodes[0].Addr
		replicas[p] = len(s.Nodes) - 1
		if !slices.Contains(primaries, p) {
			primaries = append(primaries, p)
		}
		if was, ok := owners[s.Start]; ok && was != p {
			moves = append(moves, Failover{At: time.Now(), From: was, To: p})
		}
		owners[s.Start] = p
	}
	slices.Sort(primaries)
	c.mu.Lock()
	c.replicas, c.known, c.nodes = replicas, true, primaries
	for _, m := range moves {
		c.failovers++
		c.last = m
	}
	c.mu.Unlock()
	for _, m := range moves {
		c.log.Warn("redis: a cluster slot range has a new primary (failover): pacing and shared files continue on it", "from", m.From, "to", m.To)
	}
}
