// Package fleetredis is a fleet's Redis as robotsgate uses it
// (pacing.store: redis): the one connection every store shares, made from
// pacing.redis (its login, password files and TLS), the stores opened on
// it (the pacing schedule; the fetched robots.txt, tdmrep.json and RSL
// documents the fleet shares), and the metrics that read them.
package fleetredis

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/fleet"
	"github.com/robotsgate/robotsgate/metrics"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/redisconn"
)

// Redis is the connection to a fleet's Redis and the stores opened on it,
// kept for their metrics. Close and RegisterMetrics take a nil *Redis as
// an instance without a fleet (nothing to close, every count 0).
type Redis struct {
	conn           *redisconn.Conn
	prefix         string
	log            *slog.Logger
	pacing         *pacing.Redis
	robots, tdmrep *fleet.RobotsStore
	rsl            *fleet.RobotsStore
}

// Login is how every Redis client reaches and logs in to the fleet's
// Redis (pacing.redis), its files read.
type Login struct {
	opts   redisconn.Options
	prefix string
}

// Password is the password read from pacing.redis.password_file, "" when
// none.
func (l Login) Password() string { return l.opts.Password }

// ReadLogin reads pacing.redis's files (the passwords and the CA) into
// the options of the fleet's connection; an error names the key.
func ReadLogin(r config.Redis) (Login, error) {
	l := Login{prefix: r.KeyPrefix, opts: redisconn.Options{Username: r.Username, DB: r.DB, ReplicaAcks: r.ReplicaAcks}}
	switch {
	case len(r.Sentinel.Addrs) > 0:
		l.opts.Sentinel = &redisconn.Sentinel{Master: r.Sentinel.MasterName, Addrs: r.Sentinel.Addrs, Username: r.Sentinel.Username}
		if r.Sentinel.PasswordFile != "" {
			pw, err := readPassword(r.Sentinel.PasswordFile)
			if err != nil {
				return Login{}, fmt.Errorf("pacing.redis.sentinel.password_file: %w", err)
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
			return Login{}, fmt.Errorf("pacing.redis.password_file: %w", err)
		}
		l.opts.Password = pw
	}
	if r.TLS.Enabled {
		t, err := redisTLS(r, l.opts.Addr)
		if err != nil {
			return Login{}, fmt.Errorf("pacing.redis.tls.ca_file: %w", err)
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

// Open reads pacing.redis's files and opens the connection to the
// fleet's Redis that every store shares (Close closes it).
func Open(r config.Redis, log *slog.Logger) (*Redis, error) {
	l, err := ReadLogin(r)
	if err != nil {
		return nil, err
	}
	l.opts.Logger = log
	conn, err := redisconn.Open(l.opts)
	if err != nil {
		return nil, fmt.Errorf("pacing.redis: %w", err)
	}
	return &Redis{conn: conn, prefix: l.prefix, log: log}, nil
}

// Close closes the connection, once the stores on it are done.
func (r *Redis) Close() error {
	if r == nil {
		return nil
	}
	return r.conn.Close()
}

// Status is the connection's: the node in use, its failovers.
func (r *Redis) Status() redisconn.Status { return r.conn.Status() }

// Documents creates the stores of fetched robots.txt, tdmrep.json and RSL
// documents (one record per document URL, doccache.RSLStoreKey) that the
// fleet shares.
func (r *Redis) Documents() (robots, tdmrep, rsl *fleet.RobotsStore, err error) {
	open := func(kind string) (*fleet.RobotsStore, error) {
		return fleet.NewRobotsStore(fleet.RobotsOptions{Conn: r.conn, KeyPrefix: r.prefix + kind + ":"})
	}
	if robots, err = open("robots"); err != nil {
		return nil, nil, nil, err
	}
	if tdmrep, err = open("tdmrep"); err != nil {
		return nil, nil, nil, errors.Join(err, robots.Close())
	}
	if rsl, err = open("rsl"); err != nil {
		return nil, nil, nil, errors.Join(err, robots.Close(), tdmrep.Close())
	}
	r.robots, r.tdmrep, r.rsl = robots, tdmrep, rsl
	return robots, tdmrep, rsl, nil
}

// Pacing creates the Redis pacing store. Its bound on slots (see
// pacing.RedisOptions.MaxAhead) comes from each Pacer built on it.
func (r *Redis) Pacing() (*pacing.Redis, error) {
	store, err := pacing.NewRedis(pacing.RedisOptions{Conn: r.conn, KeyPrefix: r.prefix + "pacing:", Logger: r.log})
	if err != nil {
		return nil, fmt.Errorf("pacing.redis: %w", err)
	}
	r.pacing = store
	return store, nil
}

// RegisterMetrics registers the count of corrupt records found in each
// shared store and the nodes and failovers of the connection (0 and none
// without Redis).
func (r *Redis) RegisterMetrics(m *metrics.Metrics) {
	const name, help = "robotsgate_store_corrupt_records_total", "Records read from the shared Redis store that no robotsgate wrote, by store: not trusted (reset or refetched)."
	m.LabeledCounterFunc(name, help, "store", "pacing", func() float64 {
		if r == nil || r.pacing == nil {
			return 0
		}
		return float64(r.pacing.Corrupted())
	})
	m.InfoFunc("robotsgate_redis_node_info", "The Redis nodes this instance writes to (value 1), by mode (server, sentinel, cluster): the server, Sentinel's primary it last connected to, or the Cluster's primaries.",
		[]string{"mode", "node"}, func() [][]string {
			if r == nil {
				return nil
			}
			st := r.conn.Status()
			var series [][]string
			for _, n := range st.Nodes {
				series = append(series, []string{st.Mode, n})
			}
			return series
		})
	m.CounterFunc("robotsgate_redis_failovers_total", "Times this instance moved to another Redis node (a Sentinel failover, a Cluster slot range with a new primary).",
		func() float64 {
			if r == nil {
				return 0
			}
			return float64(r.conn.Status().Failovers)
		})
	m.GaugeFunc("robotsgate_redis_last_failover_timestamp_seconds", "When this instance last moved to another Redis node, in Unix seconds; 0 if never.",
		func() float64 {
			if r == nil {
				return 0
			}
			if at := r.conn.Status().Last.At; !at.IsZero() {
				return float64(at.UnixNano()) / 1e9
			}
			return 0
		})
	var robots, tdmrep, rsl *fleet.RobotsStore
	if r != nil {
		robots, tdmrep, rsl = r.robots, r.tdmrep, r.rsl
	}
	for value, store := range map[string]*fleet.RobotsStore{"robots": robots, "tdmrep": tdmrep, "rsl": rsl} {
		m.LabeledCounterFunc(name, help, "store", value, func() float64 {
			if store == nil {
				return 0
			}
			return float64(store.Corrupted())
		})
	}
}
