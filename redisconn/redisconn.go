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
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
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

// Options configures Open. Exactly one of Addr, Sentinel and Cluster says
// where Redis is.
type Options struct {
	// Addr is one Redis server's host:port.
	Addr string
	// Sentinel, when set, finds the primary through Redis Sentinel and
	// follows its failovers (go-redis's FailoverClient).
	Sentinel *Sentinel
	// Cluster, when not empty, are seed addresses of a Redis Cluster
	// (go-redis's ClusterClient finds the other nodes from them).
	Cluster []string
	// Username, Password and DB select the account and database on the
	// data nodes (a Cluster has only database 0).
	Username, Password string
	DB                 int
	// TLS, when set, makes every connection TLS, to data nodes and
	// sentinels alike (go-redis's FailoverClient has one TLS
	// configuration). Leave ServerName empty with Sentinel or Cluster:
	// each node's certificate is then verified for the host it is
	// dialled at.
	TLS *tls.Config
	// DialTimeout, ReadTimeout and WriteTimeout bound each connection
	// attempt and socket operation, PoolTimeout the wait for a pooled
	// connection. Defaults 500ms, 500ms, 500ms and 1s.
	DialTimeout, ReadTimeout, WriteTimeout, PoolTimeout time.Duration
	// PoolSize is the number of connections per node; 0 means go-redis's
	// default (10 per CPU).
	PoolSize int
	// ReplicaAcks is how many replicas must acknowledge a write that has
	// to survive a failover, at most (see Conn.WriteNode); 0 waits for
	// none. Only Sentinel and Cluster fail over: a single server's writes
	// never wait.
	ReplicaAcks int
	// AckTimeout bounds that wait. Default DefaultAckTimeout; it must be
	// shorter than ReadTimeout.
	AckTimeout time.Duration
	// Logger receives failovers; nil means slog.Default().
	Logger *slog.Logger
}

// Sentinel locates a primary through Redis Sentinel.
type Sentinel struct {
	// Master is the name the sentinels monitor the primary under.
	Master string
	// Addrs are sentinels' host:port (go-redis also asks them for the
	// others).
	Addrs []string
	// Username and Password log in to the sentinels (Sentinel's own
	// requirepass or ACL user), not to the data nodes.
	Username, Password string
}

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
		cc := redis.NewClusterClient(opts.clusterOptions())
		cc.OnNewNode(func(n *redis.Client) { n.AddHook(dialHook{nil}) })
		c.client = cc
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

// mode checks that opts names exactly one kind of Redis.
func (o Options) mode() (string, error) {
	var modes []string
	if o.Addr != "" {
		modes = append(modes, ModeServer)
	}
	if o.Sentinel != nil {
		modes = append(modes, ModeSentinel)
		if o.Sentinel.Master == "" || len(o.Sentinel.Addrs) == 0 {
			return "", errors.New("redisconn: sentinel: a master name and at least one sentinel address are needed")
		}
	}
	if len(o.Cluster) > 0 {
		modes = append(modes, ModeCluster)
		if o.DB != 0 {
			return "", errors.New("redisconn: a Redis Cluster has only database 0")
		}
	}
	if len(modes) != 1 {
		return "", fmt.Errorf("redisconn: want exactly one of an address, sentinels and cluster seeds, got %d", len(modes))
	}
	return modes[0], nil
}

// options are the go-redis options every client shares: short timeouts,
// no retries (a pacing reservation is not idempotent), and no commands on
// connect beyond authentication and SELECT.
func (o Options) options() *redis.Options {
	return &redis.Options{
		Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLS,
		Protocol:              2,
		DialTimeout:           orDefault(o.DialTimeout, DefaultDialTimeout),
		DialerRetries:         1,
		ReadTimeout:           orDefault(o.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:          orDefault(o.WriteTimeout, DefaultWriteTimeout),
		PoolTimeout:           orDefault(o.PoolTimeout, DefaultPoolTimeout),
		PoolSize:              o.PoolSize,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DisableIdentity:       true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
}

func (o Options) failoverOptions() *redis.FailoverOptions {
	b := o.options()
	return &redis.FailoverOptions{
		MasterName: o.Sentinel.Master, SentinelAddrs: o.Sentinel.Addrs,
		SentinelUsername: o.Sentinel.Username, SentinelPassword: o.Sentinel.Password,
		Username: b.Username, Password: b.Password, DB: b.DB, TLSConfig: b.TLSConfig, Protocol: b.Protocol,
		DialTimeout: b.DialTimeout, DialerRetries: b.DialerRetries, ReadTimeout: b.ReadTimeout,
		WriteTimeout: b.WriteTimeout, PoolTimeout: b.PoolTimeout, PoolSize: b.PoolSize,
		ContextTimeoutEnabled: true, MaxRetries: -1, DisableIdentity: true,
	}
}

func (o Options) clusterOptions() *redis.ClusterOptions {
	b := o.options()
	return &redis.ClusterOptions{
		Addrs: o.Cluster, Username: b.Username, Password: b.Password, TLSConfig: b.TLSConfig, Protocol: b.Protocol,
		DialTimeout: b.DialTimeout, DialerRetries: b.DialerRetries, ReadTimeout: b.ReadTimeout,
		WriteTimeout: b.WriteTimeout, PoolTimeout: b.PoolTimeout, PoolSize: b.PoolSize,
		ContextTimeoutEnabled: true, MaxRetries: -1, DisableIdentity: true,
		// A MOVED or ASK answer is followed (the command did not run);
		// a network error is not retried.
		MaxRedirects:             3,
		MaintNotificationsConfig: b.MaintNotificationsConfig,
	}
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

// dialHook reports each data connection's node to the Conn (nil: none).
type dialHook struct{ c *Conn }

func (h dialHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil && h.c != nil {
			h.c.dialed(conn.RemoteAddr().String())
		}
		return conn, err
	}
}

func (dialHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (dialHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// orDefault returns v, or def when v is the zero value.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
