package redisconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
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

// orDefault returns v, or def when v is the zero value.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
