package proxy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/fleetredis"
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
			l, err := fleetredis.ReadLogin(tc.redis)
			if err != nil || l.Password() != tc.password {
				t.Errorf("password %q (%v), want %q", l.Password(), err, tc.password)
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
