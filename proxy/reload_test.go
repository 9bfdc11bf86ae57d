package proxy

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/config"
)

func TestRestartOnlyChangesNameTheirKeys(t *testing.T) {
	running := config.Default()
	reloaded := config.Default()
	reloaded.Listen = "127.0.0.1:18080"
	reloaded.Log.Audit = "/var/log/robotsgate/audit.log"
	reloaded.Robots.CacheEntries = 10
	reloaded.Pacing.MaxWait = config.Duration(time.Second)   // applies on reload
	reloaded.Clients = []config.Client{{CIDR: "10.0.0.0/8"}} // applies on reload
	got := restartOnlyChanges(&running, &reloaded)
	if want := []string{"listen", "log.audit", "robots.cache_entries"}; !slices.Equal(got, want) {
		t.Errorf("restart-only changes %q, want %q", got, want)
	}
	if got := restartOnlyChanges(&running, &running); len(got) != 0 {
		t.Errorf("no change: %q", got)
	}
}

// Reloading a change to a restart-only key says so, naming the key
// (regression: "config reloaded" as if it applied).
func TestReloadWarnsAboutRestartOnlyKeys(t *testing.T) {
	cfg := testConfig(t, nil)
	p := startProxy(t, cfg)
	cfg.Robots.CacheEntries = 7
	cfg.Pacing.MaxWait = config.Duration(time.Second)
	if err := p.srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.logText(), `level=WARN msg="configuration reloaded, but these keys keep their running values until a restart" keys=[robots.cache_entries]`) {
		t.Errorf("no warning naming robots.cache_entries:\n%s", p.logText())
	}
}

// Every pacing.redis key is read once, at start (the Redis clients are
// built then): a reload that changes one names it.
func TestRestartOnlyChangesNameEveryRedisKey(t *testing.T) {
	for key, change := range map[string]func(*config.Redis){
		"pacing.redis.addr":          func(r *config.Redis) { r.Addr = "redis.internal:6379" },
		"pacing.redis.sentinel":      func(r *config.Redis) { r.Sentinel.Addrs = []string{"10.0.0.1:26379"} },
		"pacing.redis.cluster.addrs": func(r *config.Redis) { r.Cluster.Addrs = []string{"10.0.0.1:7000"} },
		"pacing.redis.replica_acks":  func(r *config.Redis) { r.ReplicaAcks = 2 },
		"pacing.redis.username":      func(r *config.Redis) { r.Username = "robotsgate" },
		"pacing.redis.password_file": func(r *config.Redis) { r.PasswordFile = "/etc/robotsgate/redis-password" },
		"pacing.redis.db":            func(r *config.Redis) { r.DB = 2 },
		"pacing.redis.key_prefix":    func(r *config.Redis) { r.KeyPrefix = "fleet-a:" },
		"pacing.redis.tls.enabled":   func(r *config.Redis) { r.TLS.Enabled = true },
		"pacing.redis.tls.ca_file":   func(r *config.Redis) { r.TLS.CAFile = "/etc/robotsgate/redis-ca.pem" },
	} {
		running, reloaded := config.Default(), config.Default()
		change(&reloaded.Pacing.Redis)
		if got := restartOnlyChanges(&running, &reloaded); !slices.Equal(got, []string{key}) {
			t.Errorf("changing %s: restart-only changes %q", key, got)
		}
	}
}
