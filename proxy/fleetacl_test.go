package proxy

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/internal/redistest"
)

// fleetConfig is testConfig sharing the Redis at addr, archiving into a
// directory of its own.
func fleetConfig(t *testing.T, addr string) config.Config {
	cfg := testConfig(t, nil)
	cfg.Pacing.Store = config.StoreRedis
	cfg.Pacing.Redis.Addr = addr
	cfg.Archive.Dir = filepath.Join(t.TempDir(), "archive")
	return cfg
}

// documentedACL returns the ACL SETUSER command of docs/fleet.md with
// password and key prefix put in, as arguments.
func documentedACL(t *testing.T, password, prefix string) []any {
	t.Helper()
	doc, err := os.ReadFile("../docs/fleet.md")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^ACL SETUSER robotsgate .*$`).Find(doc)
	if line == nil {
		t.Fatal("docs/fleet.md has no line starting ACL SETUSER robotsgate")
	}
	var args []any
	for _, f := range strings.Fields(string(line)) {
		switch {
		case strings.HasPrefix(f, ">"):
			f = ">" + password
		case strings.HasPrefix(f, "~robotsgate:"), strings.HasPrefix(f, "&robotsgate:"):
			f = f[:1] + prefix + strings.TrimPrefix(f[1:], "robotsgate:")
		}
		args = append(args, f)
	}
	return args
}

// TestFleetLogsInAsAnACLUserOverTLS: with pacing.redis naming an ACL user
// (docs/fleet.md's minimal ACL), a password file, a database, a key prefix
// and TLS with a CA file, every Redis client robotsgate makes logs in:
// the pacing schedule and the robots.txt and tdmrep.json files are shared
// under the prefix in that database, Redis refuses none of the commands
// sent (scripts reloaded after SCRIPT FLUSH, a corrupt slot reset
// included), and a wrong password makes the instance not ready.
func TestFleetLogsInAsAnACLUserOverTLS(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Options{TLS: true, Args: []string{"--requirepass", "admin-secret"}})
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr, Password: "admin-secret", TLSConfig: srv.ClientTLS(), Protocol: 2, DisableIdentity: true, DB: 3})
	t.Cleanup(func() { admin.Close() })
	ctx := context.Background()
	if err := admin.Do(ctx, documentedACL(t, "fleet-secret", "fleet-a:")...).Err(); err != nil {
		t.Fatalf("the documented ACL: %v", err)
	}
	pwFile := filepath.Join(t.TempDir(), "redis-password")
	os.WriteFile(pwFile, []byte("fleet-secret\n"), 0o600)
	o := startOrigin(t, "127.0.0.2", false, "User-agent: *\nDisallow: /private\nCrawl-delay: 1\n", 0)
	cfg := fleetConfig(t, srv.Addr)
	cfg.Pacing.Redis = config.Redis{Addr: srv.Addr, Username: "robotsgate", PasswordFile: pwFile, DB: 3, KeyPrefix: "fleet-a:",
		TLS: config.RedisTLS{Enabled: true, CAFile: srv.CAFile}}
	purposes(&cfg, "train-ai") // tdmrep.json too
	p := startProxy(t, cfg)
	if err := p.srv.ready(ctx); err != nil {
		t.Fatalf("not ready: %v", err)
	}
	if resp, _ := get(t, p.client(), o.URL+"/private/x"); resp.StatusCode != 403 {
		t.Fatalf("/private/x: %d", resp.StatusCode)
	}
	admin.ScriptFlush(ctx) // the next reservation sends EVALSHA, then EVAL
	for i := range 2 {
		if resp, _ := get(t, p.client(), o.URL+"/page"+strconv.Itoa(i)); resp.StatusCode != 200 {
			t.Fatalf("/page%d: %d %s", i, resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision"))
		}
	}
	for _, pattern := range []string{"fleet-a:robots:*", "fleet-a:tdmrep:*", "fleet-a:pacing:*"} {
		if keys := admin.Keys(ctx, pattern).Val(); len(keys) != 1 {
			t.Errorf("keys %s in database 3: %q, want one", pattern, keys)
		}
	}
	for _, key := range admin.Keys(ctx, "fleet-a:pacing:*").Val() {
		admin.Set(ctx, key, "inf", time.Hour) // reset with DEL
	}
	if resp, _ := get(t, p.client(), o.URL+"/page-after-reset"); resp.StatusCode != 200 {
		t.Errorf("after a corrupt slot: %d %s", resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision"))
	}
	if denied := admin.Do(ctx, "ACL", "LOG").Val(); denied == nil || len(denied.([]any)) != 0 {
		t.Errorf("Redis refused commands of the robotsgate user: %v", denied)
	}
	os.WriteFile(pwFile, []byte("wrong\n"), 0o600)
	if err := startProxy(t, cfg).srv.ready(ctx); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("ready with a wrong password: %v", err)
	}
}
