package proxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/fleet"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/redisconn"
	"github.com/robotsgate/robotsgate/robots"
)

// redisClients are the Redis stores of a fleet (pacing.store: redis) and
// the one connection they share, kept for their metrics; nil without.
type redisClients struct {
	conn           *redisconn.Conn
	pacing         *pacing.Redis
	robots, tdmrep *fleet.RobotsStore
	rsl            *fleet.RobotsStore
}

// redisLogin is how every Redis client reaches and logs in to the fleet's
// Redis (pacing.redis), its files read.
type redisLogin struct {
	opts     redisconn.Options
	password string // opts.Password, for the tests
	prefix   string
}

// readRedisLogin reads pacing.redis's files (the passwords and the CA)
// into the options of the fleet's connection.
func readRedisLogin(r config.Redis) (redisLogin, error) {
	l := redisLogin{prefix: r.KeyPrefix, opts: redisconn.Options{Username: r.Username, DB: r.DB, ReplicaAcks: r.ReplicaAcks}}
	switch {
	case len(r.Sentinel.Addrs) > 0:
		l.opts.Sentinel = &redisconn.Sentinel{Master: r.Sentinel.MasterName, Addrs: r.Sentinel.Addrs, Username: r.Sentinel.Username}
		if r.Sentinel.PasswordFile != "" {
			pw, err := readPassword(r.Sentinel.PasswordFile)
			if err != nil {
				return redisLogin{}, fmt.Errorf("proxy: pacing.redis.sentinel.password_file: %w", err)
			}
			l.opts.Sentinel.Password = pw
		}
	case len(r.Cluster.Addrs) > 0:
		l.opts.Cluster = r.Cluster.Addrs
	default:
		l.opts.Addr = r.Addr
	}
	if r.PasswordFile != "" {
		pw, err := readPassword(r.PasswordFile)
		if err != nil {
			return redisLogin{}, fmt.Errorf("proxy: pacing.redis.password_file: %w", err)
		}
		l.password, l.opts.Password = pw, pw
	}
	if r.TLS.Enabled {
		t, err := redisTLS(r, l.opts.Addr)
		if err != nil {
			return redisLogin{}, fmt.Errorf("proxy: pacing.redis.tls.ca_file: %w", err)
		}
		l.opts.TLS = t
	}
	return l, nil
}

// readPassword returns the first line of file, without its line end.
func readPassword(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	line, _, _ := bufio.NewReader(bytes.NewReader(data)).ReadLine()
	if len(line) == 0 {
		return "", fmt.Errorf("%s: no password on its first line", file)
	}
	return string(line), nil
}

// redisTLS is the TLS configuration of pacing.redis.tls: each server's
// certificate verified against ca_file's certificates or the system
// roots, for the host of addr (a single server), or for the host each
// node is dialled at (addr "": sentinels, the primary they name, a
// cluster's nodes).
func redisTLS(r config.Redis, addr string) (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if addr != "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("pacing.redis.addr %q: %w", addr, err)
		}
		t.ServerName = host
	}
	if r.TLS.CAFile == "" {
		return t, nil
	}
	pem, err := os.ReadFile(r.TLS.CAFile)
	if err != nil {
		return nil, err
	}
	t.RootCAs = x509.NewCertPool()
	if !t.RootCAs.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", r.TLS.CAFile)
	}
	return t, nil
}

// redisConn returns the connection to the fleet's Redis that every store
// shares, opening it on first use (closeRedis closes it).
func (s *Server) redisConn(r config.Redis) (*redisconn.Conn, string, error) {
	l, err := readRedisLogin(r)
	if err != nil {
		return nil, "", err
	}
	if s.redis.conn == nil {
		l.opts.Logger = s.log
		conn, err := redisconn.Open(l.opts)
		if err != nil {
			return nil, "", fmt.Errorf("proxy: pacing.redis: %w", err)
		}
		s.redis.conn = conn
	}
	return s.redis.conn, l.prefix, nil
}

// closeRedis closes the fleet's Redis connection, if any, once the
// stores on it are done.
func (s *Server) closeRedis() error {
	if s.redis.conn == nil {
		return nil
	}
	return s.redis.conn.Close()
}

// openSharedStores creates the Redis stores of fetched robots.txt and
// tdmrep.json files.
func (s *Server) openSharedStores(r config.Redis) (robotsStore, tdmStore *fleet.RobotsStore, err error) {
	conn, prefix, err := s.redisConn(r)
	if err != nil {
		return nil, nil, err
	}
	if robotsStore, err = fleet.NewRobotsStore(fleet.RobotsOptions{Conn: conn, KeyPrefix: prefix + "robots:"}); err != nil {
		return nil, nil, fmt.Errorf("proxy: %w", err)
	}
	if tdmStore, err = fleet.NewRobotsStore(fleet.RobotsOptions{Conn: conn, KeyPrefix: prefix + "tdmrep:"}); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("proxy: %w", err), robotsStore.Close())
	}
	s.redis.robots, s.redis.tdmrep = robotsStore, tdmStore
	return robotsStore, tdmStore, nil
}

// openRSLStore creates the Redis store of fetched RSL documents (one
// record per document URL, doccache.RSLStoreKey).
func (s *Server) openRSLStore(r config.Redis) (*fleet.RobotsStore, error) {
	conn, prefix, err := s.redisConn(r)
	if err != nil {
		return nil, err
	}
	store, err := fleet.NewRobotsStore(fleet.RobotsOptions{Conn: conn, KeyPrefix: prefix + "rsl:"})
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	s.redis.rsl = store
	return store, nil
}

// openRedisPacing creates the Redis pacing store. Its bound on slots (see
// pacing.RedisOptions.MaxAhead) comes from each Pacer built on it
// (longestInterval).
func (s *Server) openRedisPacing(r config.Redis) (*pacing.Redis, error) {
	conn, prefix, err := s.redisConn(r)
	if err != nil {
		return nil, err
	}
	store, err := pacing.NewRedis(pacing.RedisOptions{Conn: conn, KeyPrefix: prefix + "pacing:", Logger: s.log})
	if err != nil {
		return nil, fmt.Errorf("proxy: pacing.redis: %w", err)
	}
	s.redis.pacing = store
	return store, nil
}

// longestInterval is the longest interval cfg can pace a request at:
// pacing.max_delay when set (it caps everything), else the longest of what
// robots.txt can ask for (robots.MaxDelay), pacing.default_delay and the
// sites' delays.
func longestInterval(cfg config.Config) time.Duration {
	if d := cfg.Pacing.MaxDelay.Duration(); d > 0 {
		return d
	}
	d := max(robots.MaxDelay, cfg.Pacing.DefaultDelay.Duration())
	for _, site := range cfg.Sites {
		d = max(d, site.Delay.Duration())
	}
	return d
}

// registerRedisMetrics registers the count of corrupt records found in
// each shared store (0 without Redis).
func (s *Server) registerRedisMetrics() {
	const name, help = "robotsgate_store_corrupt_records_total", "Records read from the shared Redis store that no robotsgate wrote, by store: not trusted (reset or refetched)."
	s.metrics.LabeledCounterFunc(name, help, "store", "pacing", func() float64 {
		if s.redis.pacing == nil {
			return 0
		}
		return float64(s.redis.pacing.Corrupted())
	})
	s.metrics.InfoFunc("robotsgate_redis_node_info", "The Redis nodes this instance writes to (value 1), by mode (server, sentinel, cluster): the server, Sentinel's primary it last connected to, or the Cluster's primaries.",
		[]string{"mode", "node"}, func() [][]string {
			if s.redis.conn == nil {
				return nil
			}
			st := s.redis.conn.Status()
			var series [][]string
			for _, n := range st.Nodes {
				series = append(series, []string{st.Mode, n})
			}
			return series
		})
	s.metrics.CounterFunc("robotsgate_redis_failovers_total", "Times this instance moved to another Redis node (a Sentinel failover, a Cluster slot range with a new primary).",
		func() float64 {
			if s.redis.conn == nil {
				return 0
			}
			return float64(s.redis.conn.Status().Failovers)
		})
	s.metrics.GaugeFunc("robotsgate_redis_last_failover_timestamp_seconds", "When this instance last moved to another Redis node, in Unix seconds; 0 if never.",
		func() float64 {
			if s.redis.conn == nil {
				return 0
			}
			if at := s.redis.conn.Status().Last.At; !at.IsZero() {
				return float64(at.UnixNano()) / 1e9
			}
			return 0
		})
	for value, store := range map[string]*fleet.RobotsStore{"robots": s.redis.robots, "tdmrep": s.redis.tdmrep, "rsl": s.redis.rsl} {
		s.metrics.LabeledCounterFunc(name, help, "store", value, func() float64 {
			if store == nil {
				return 0
			}
			return float64(store.Corrupted())
		})
	}
}
