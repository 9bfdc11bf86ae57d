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
	"github.com/robotsgate/robotsgate/robots"
)

// redisClients are the Redis clients of a fleet (pacing.store: redis), kept
// for their metrics; nil without.
type redisClients struct {
	pacing         *pacing.Redis
	robots, tdmrep *fleet.RobotsStore
	rsl            *fleet.RobotsStore
}

// redisLogin is how every Redis client reaches and logs in to the fleet's
// Redis (pacing.redis), its files read.
type redisLogin struct {
	addr, username, password string
	db                       int
	tls                      *tls.Config // nil: plain TCP
	prefix                   string
}

// readRedisLogin reads pacing.redis's files: the password and the CA.
func readRedisLogin(r config.Redis) (redisLogin, error) {
	l := redisLogin{addr: r.Addr, username: r.Username, db: r.DB, prefix: r.KeyPrefix}
	if r.PasswordFile != "" {
		pw, err := readPassword(r.PasswordFile)
		if err != nil {
			return redisLogin{}, fmt.Errorf("proxy: pacing.redis.password_file: %w", err)
		}
		l.password = pw
	}
	if r.TLS.Enabled {
		t, err := redisTLS(r)
		if err != nil {
			return redisLogin{}, fmt.Errorf("proxy: pacing.redis.tls.ca_file: %w", err)
		}
		l.tls = t
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

// redisTLS is the TLS configuration of pacing.redis.tls: the server's
// certificate verified for the host of addr, against ca_file's
// certificates or the system roots.
func redisTLS(r config.Redis) (*tls.Config, error) {
	host, _, err := net.SplitHostPort(r.Addr)
	if err != nil {
		return nil, fmt.Errorf("pacing.redis.addr %q: %w", r.Addr, err)
	}
	t := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
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

// openSharedStores creates the Redis stores of fetched robots.txt and
// tdmrep.json files.
func (s *Server) openSharedStores(r config.Redis) (robotsStore, tdmStore *fleet.RobotsStore, err error) {
	l, err := readRedisLogin(r)
	if err != nil {
		return nil, nil, err
	}
	opts := fleet.RobotsOptions{Addr: l.addr, Username: l.username, Password: l.password, DB: l.db, TLS: l.tls}
	opts.KeyPrefix = l.prefix + "robots:"
	if robotsStore, err = fleet.NewRobotsStore(opts); err != nil {
		return nil, nil, fmt.Errorf("proxy: %w", err)
	}
	opts.KeyPrefix = l.prefix + "tdmrep:"
	if tdmStore, err = fleet.NewRobotsStore(opts); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("proxy: %w", err), robotsStore.Close())
	}
	s.redis.robots, s.redis.tdmrep = robotsStore, tdmStore
	return robotsStore, tdmStore, nil
}

// openRSLStore creates the Redis store of fetched RSL documents (one
// record per document URL, rslcache.StoreKey).
func (s *Server) openRSLStore(r config.Redis) (*fleet.RobotsStore, error) {
	l, err := readRedisLogin(r)
	if err != nil {
		return nil, err
	}
	store, err := fleet.NewRobotsStore(fleet.RobotsOptions{Addr: l.addr, Username: l.username, Password: l.password, DB: l.db, TLS: l.tls,
		KeyPrefix: l.prefix + "rsl:"})
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
	l, err := readRedisLogin(r)
	if err != nil {
		return nil, err
	}
	store, err := pacing.NewRedis(pacing.RedisOptions{Addr: l.addr, Username: l.username, Password: l.password,
		DB: l.db, TLS: l.tls, KeyPrefix: l.prefix + "pacing:", Logger: s.log})
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
	for value, store := range map[string]*fleet.RobotsStore{"robots": s.redis.robots, "tdmrep": s.redis.tdmrep, "rsl": s.redis.rsl} {
		s.metrics.LabeledCounterFunc(name, help, "store", value, func() float64 {
			if store == nil {
				return 0
			}
			return float64(store.Corrupted())
		})
	}
}
