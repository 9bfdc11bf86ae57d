package proxy

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/robots"
)

// The files of pacing.redis are read at start (and by CheckFiles, before
// anything is created); a bad one is an error naming its key; the
// password is the file's first line, without its line end.
func TestRedisFilesAreReadAtStart(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		file := filepath.Join(dir, name)
		os.WriteFile(file, []byte(content), 0o600)
		return file
	}
	for _, tc := range []struct {
		name     string
		redis    config.Redis
		password string // when no error
		err      string
	}{
		{name: "password with CRLF", redis: config.Redis{PasswordFile: write("crlf", "s3cret \r\nsecond line\n")}, password: "s3cret "},
		{name: "password without line end", redis: config.Redis{PasswordFile: write("bare", "s3cret")}, password: "s3cret"},
		{name: "missing password file", redis: config.Redis{PasswordFile: filepath.Join(dir, "absent")}, err: "pacing.redis.password_file: open "},
		{name: "empty password file", redis: config.Redis{PasswordFile: write("empty", "\nsecond\n")}, err: "pacing.redis.password_file: " + dir + "/empty: no password on its first line"},
		{name: "missing CA file", redis: config.Redis{TLS: config.RedisTLS{Enabled: true, CAFile: filepath.Join(dir, "absent.pem")}}, err: "pacing.redis.tls.ca_file: open "},
		{name: "CA file without a certificate", redis: config.Redis{TLS: config.RedisTLS{Enabled: true, CAFile: write("ca.pem", "not PEM")}}, err: "pacing.redis.tls.ca_file: no certificate in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Pacing.Store = config.StoreRedis
			tc.redis.Addr, tc.redis.KeyPrefix = "127.0.0.1:6379", "robotsgate:"
			cfg.Pacing.Redis = tc.redis
			err := CheckFiles(cfg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("CheckFiles: %v, want %q", err, tc.err)
				}
				return
			}
			l, err := readRedisLogin(tc.redis)
			if err != nil || l.password != tc.password {
				t.Errorf("password %q (%v), want %q", l.password, err, tc.password)
			}
		})
	}
}

// The longest interval a configuration paces at bounds what a shared
// pacing key may hold: pacing.max_delay when set, else the longest of
// robots.txt's, the floor's and the sites' intervals.
func TestLongestInterval(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*config.Config)
		want  time.Duration
	}{
		{"defaults: robots.txt's longest Crawl-delay", func(*config.Config) {}, robots.MaxDelay},
		{"max_delay caps everything", func(c *config.Config) {
			c.Pacing.MaxDelay, c.Pacing.DefaultDelay = config.Duration(30*time.Second), config.Duration(10*time.Second)
			c.Sites = []config.Site{{Hosts: []string{"a.example"}, Delay: config.Duration(time.Hour)}}
		}, 30 * time.Second},
		{"a floor longer than any Crawl-delay", func(c *config.Config) { c.Pacing.DefaultDelay = config.Duration(100 * 24 * time.Hour) }, 100 * 24 * time.Hour},
		{"a site's delay longer than any Crawl-delay", func(c *config.Config) {
			c.Sites = []config.Site{{Hosts: []string{"a.example"}, Delay: config.Duration(60 * 24 * time.Hour)}}
		}, 60 * 24 * time.Hour},
	} {
		cfg := config.Default()
		tc.setup(&cfg)
		if got := longestInterval(cfg); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// pacing.redis picks one kind of Redis for the connection: the sentinels
// (with their own password) or the cluster's seeds over the single
// address; with TLS, a single server is verified for the host of addr,
// the nodes of Sentinel and Cluster each for the host it is dialled at
// (redisconn's TLS tests dial them); a missing sentinel password file is
// an error naming its key.
func TestRedisLoginPicksTheKindOfRedis(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	os.WriteFile(pw, []byte("watch\n"), 0o600)
	tlsSrv := httptest.NewTLSServer(nil)
	tlsSrv.Close()
	ca := upstreamCAs(t, tlsSrv.Certificate())
	tlsOn := config.RedisTLS{Enabled: true, CAFile: ca}
	for _, tc := range []struct {
		name  string
		redis config.Redis
		check func(redisLogin) string
	}{
		{"one server", config.Redis{Addr: "redis.internal:6379", TLS: tlsOn}, func(l redisLogin) string {
			if l.opts.Addr != "redis.internal:6379" || l.opts.Sentinel != nil || l.opts.Cluster != nil || l.opts.TLS.ServerName != "redis.internal" {
				return "want the address, verified for its host"
			}
			return ""
		}},
		{"sentinel", config.Redis{Addr: "127.0.0.1:6379", ReplicaAcks: 2, TLS: tlsOn, Sentinel: config.RedisSentinel{MasterName: "fleet",
			Addrs: []string{"10.0.0.1:26379"}, Username: "watcher", PasswordFile: pw}}, func(l redisLogin) string {
			s := l.opts.Sentinel
			if l.opts.Addr != "" || s == nil || s.Master != "fleet" || s.Username != "watcher" || s.Password != "watch" ||
				l.opts.ReplicaAcks != 2 || l.opts.TLS.ServerName != "" || l.opts.TLS.RootCAs == nil {
				return "want the sentinels with their login, each node verified for its own host"
			}
			return ""
		}},
		{"cluster", config.Redis{Addr: "127.0.0.1:6379", TLS: tlsOn, Cluster: config.RedisCluster{Addrs: []string{"10.0.0.1:7000"}}}, func(l redisLogin) string {
			if l.opts.Addr != "" || len(l.opts.Cluster) != 1 || l.opts.TLS.ServerName != "" {
				return "want the seeds, each node verified for its own host"
			}
			return ""
		}},
	} {
		l, err := readRedisLogin(tc.redis)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if msg := tc.check(l); msg != "" {
			t.Errorf("%s: %+v: %s", tc.name, l.opts, msg)
		}
	}
	_, err := readRedisLogin(config.Redis{Sentinel: config.RedisSentinel{MasterName: "m", Addrs: []string{"a:1"}, PasswordFile: filepath.Join(dir, "absent")}})
	if err == nil || !strings.Contains(err.Error(), "pacing.redis.sentinel.password_file: open ") {
		t.Errorf("a missing sentinel password file: %v", err)
	}
}
