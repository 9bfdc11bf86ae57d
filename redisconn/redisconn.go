// Package redisconn connects robotsgate to the Redis a fleet shares: one
// server, a primary that Redis Sentinel fails over, or a Redis Cluster,
// through go-redis's clients (a Client, a FailoverClient or a
// ClusterClient: one redis.UniversalClient that the pacing and fleet
// stores use). It also says which Redis node the instance uses and when it
// moved to another (a failover), and how many replicas must acknowledge a
// write (WAIT) before the write survives a failover: Redis replicates
// asynchronously, so a write the primary acknowledged can be lost when a
// replica is promoted, and a lost pacing reservation would let two
// requests reach an origin closer than its interval.
//
// It must not decide anything: it connects, watches and reports.
package redisconn

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Modes of a Conn.
const (
	ModeServer   = "server"
	ModeSentinel = "sentinel"
	ModeCluster  = "cluster"
)

// Defaults of Options.
const (
	DefaultDialTimeout  = 500 * time.Millisecond
	DefaultReadTimeout  = 500 * time.Millisecond
	DefaultWriteTimeout = 500 * time.Millisecond
	DefaultPoolTimeout  = time.Second
	// DefaultAckTimeout is the default Options.AckTimeout: on loopback or a
	// LAN a replica acknowledges in well under a millisecond; a replica
	// that needs a quarter of a second is lagging, and a write it has not
	// acknowledged is not relied on.
	DefaultAckTimeout = 250 * time.Millisecond
	// watchInterval is how often the topology (the replicas a write waits
	// for, a Cluster's masters) is read again.
	watchInterval = time.Second
)

// Failover is a move of the instance from one Redis node to another.
type Failover struct {
	// At is when the instance noticed it: its first connection to the new
	// node (Sentinel) or the first topology read that showed it (Cluster).
	At time.Time
	// From and To are the nodes' host:port.
	From, To string
}

// Status is what Conn.Status reports, for metrics and /readyz.
type Status struct {
	// Mode is ModeServer, ModeSentinel or ModeCluster.
	Mode string
	// Master is Sentinel's master name ("" otherwise).
	Master string
	// Nodes are the nodes the instance writes to: the server, Sentinel's
	// primary it last connected to, or the Cluster's primaries; empty
	// before the first connection.
	Nodes []string
	// Failovers counts the moves since start; Last is the latest (zero At
	// when none).
	Failovers uint64
	Last      Failover
}

// Conn is a connection to the fleet's Redis. It is safe for concurrent
// use.
type Conn struct {
	client     redis.UniversalClient
	mode       string
	opts       Options
	log        *slog.Logger
	ackTimeout time.Duration

	mu        sync.Mutex
	nodes     []string       // see Status.Nodes
	replicas  map[string]int // promotable replicas by primary (Sentinel: of the one primary, key "")
	known     bool           // replicas has been read once
	failovers uint64
	last      Failover

	kick    chan struct{} // asks the watcher to read the topology now
	read    chan struct{} // closed when the watcher has tried once
	stop    context.CancelFunc
	watched chan struct{} // closed when the watcher has returned
	closed  atomic.Bool
}

// Open makes the client for opts. It does not connect: the first command
// does, so a Redis that is down at start does not stop robotsgate from
// starting; with Sentinel or Cluster a goroutine watches the topology
// until Close.
func Open(opts Options) (*Conn, error) {
	mode, err := opts.mode()
	if err != nil {
		return nil, err
	}
	c := &Conn{mode: mode, opts: opts, log: opts.Logger, ackTimeout: orDefault(opts.AckTimeout, DefaultAckTimeout),
		replicas: map[string]int{}, kick: make(chan struct{}, 1), read: make(chan struct{}), watched: make(chan struct{})}
	if c.log == nil {
		c.log = slog.Default()
	}
	switch mode {
	case ModeServer:
		o := opts.options()
		o.Addr = opts.Addr
		c.client = redis.NewClient(o)
		c.nodes = []string{opts.Addr}
	case ModeSentinel:
		f := opts.failoverOptions()
		fc := redis.NewFailoverClient(f)
		fc.AddHook(dialHook{c})
		c.client = fc
	case ModeCluster:
		c.client = redis.NewClusterClient(opts.clusterOptions())
	}
	ctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	if mode == ModeServer {
		close(c.watched)
		close(c.read)
	} else {
		go c.watch(ctx)
	}
	return c, nil
}

// Client is the connection's go-redis client. Do not close it: Close the
// Conn.
func (c *Conn) Client() redis.UniversalClient { return c.client }

// Mode is ModeServer, ModeSentinel or ModeCluster.
func (c *Conn) Mode() string { return c.mode }

// Status says which nodes the instance uses and its failovers.
func (c *Conn) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Status{Mode: c.mode, Nodes: slices.Clone(c.nodes), Failovers: c.failovers, Last: c.last}
	if c.opts.Sentinel != nil {
		s.Master = c.opts.Sentinel.Master
	}
	return s
}

// String describes the status in one line, for /readyz and logs.
func (s Status) String() string {
	var b strings.Builder
	switch s.Mode {
	case ModeSentinel:
		fmt.Fprintf(&b, "redis: sentinel master %q", s.Master)
	case ModeCluster:
		b.WriteString("redis: cluster primaries")
	default:
		b.WriteString("redis: server")
	}
	if len(s.Nodes) == 0 {
		b.WriteString(", not connected yet")
	} else {
		b.WriteString(" at " + strings.Join(s.Nodes, " "))
	}
	if !s.Last.At.IsZero() {
		fmt.Fprintf(&b, "; failed over %d time(s), last at %s from %s to %s", s.Failovers,
			s.Last.At.UTC().Format(time.RFC3339), s.Last.From, s.Last.To)
	}
	return b.String()
}

// WriteNode returns the client a write of key must go through when it is
// followed by WAIT (the command counts the acknowledgements of the
// connection's own writes, so both go in one pipeline on one node: the
// FailoverClient, or key's primary in a Cluster) and how many replicas
// must acknowledge it: the fewer of ReplicaAcks and the replicas that
// could be promoted in the primary's place (Sentinel: those the sentinels
// see up; Cluster: the primary's replicas not failed). A write that none
// could be promoted in place of cannot be lost to a failover; a single
// server never fails over. acks is 0 when nothing need be waited for.
func (c *Conn) WriteNode(ctx context.Context, key string) (node redis.Cmdable, acks int, err error) {
	if c.opts.ReplicaAcks <= 0 || c.mode == ModeServer {
		return c.client, 0, nil
	}
	select { // the first writes wait for the first look at the topology
	case <-c.read:
	case <-ctx.Done():
		return nil, 0, fmt.Errorf("redisconn: the topology is not read yet: %w", ctx.Err())
	}
	if cc, ok := c.client.(*redis.ClusterClient); ok {
		n, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return nil, 0, fmt.Errorf("redisconn: the primary of %q: %w", key, err)
		}
		return n, c.acksFor(n.Options().Addr), nil
	}
	return c.client, c.acksFor(""), nil
}

// acksFor is how many replicas of primary (Sentinel: "") a write waits
// for. While the topology could not be read it is ReplicaAcks: as many as
// asked, which a Redis without replicas answers with none (the write is
// then refused until the watcher has read that there are none).
func (c *Conn) acksFor(primary string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known {
		return c.opts.ReplicaAcks
	}
	return min(c.opts.ReplicaAcks, c.replicas[primary])
}

// AckTimeout is how long a write waits for its replicas' acknowledgement.
func (c *Conn) AckTimeout() time.Duration { return c.ackTimeout }

// ShortOfAcks tells the Conn that a write got fewer acknowledgements than
// WriteNode asked for: the replicas may have changed (one died, a
// failover), so the topology is read again at once.
func (c *Conn) ShortOfAcks() { c.refresh() }

// refresh asks the watcher to read the topology now.
func (c *Conn) refresh() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Close stops the watcher and closes the client.
func (c *Conn) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	c.stop()
	<-c.watched
	if err := c.client.Close(); err != nil {
		return fmt.Errorf("redisconn: close: %w", err)
	}
	return nil
}

// dialed records the node a data connection was made to (Sentinel):
// another node than the last one is a failover.
func (c *Conn) dialed(addr string) {
	c.mu.Lock()
	var moved bool
	if len(c.nodes) == 1 && c.nodes[0] != addr {
		c.failovers++
		c.last = Failover{At: time.Now(), From: c.nodes[0], To: addr}
		moved = true
	}
	c.nodes = []string{addr}
	last := c.last
	c.mu.Unlock()
	if moved {
		c.log.Warn("redis: the primary changed (sentinel failover): pacing and shared files continue on the new primary",
			"master", c.opts.Sentinel.Master, "from", last.From, "to", last.To)
		c.refresh()
	}
}

// dialHook reports each data connection's node to the Conn (Sentinel:
// the FailoverClient dials whichever node the sentinels name).
type dialHook struct{ c *Conn }

func (h dialHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil {
			h.c.dialed(conn.RemoteAddr().String())
		}
		return conn, err
	}
}

func (dialHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (dialHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
