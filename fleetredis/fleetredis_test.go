package fleetredis

import (
	"crypto/x509"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/config"
)

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
	ca := caFile(t, tlsSrv.Certificate())
	tlsOn := config.RedisTLS{Enabled: true, CAFile: ca}
	for _, tc := range []struct {
		name  string
		redis config.Redis
		check func(Login) string
	}{
		{"one server", config.Redis{Addr: "redis.internal:6379", TLS: tlsOn}, func(l Login) string {
			if l.opts.Addr != "redis.internal:6379" || l.opts.Sentinel != nil || l.opts.Cluster != nil || l.opts.TLS.ServerName != "redis.internal" {
				return "want the address, verified for its host"
			}
			return ""
		}},
		{"sentinel", config.Redis{Addr: "127.0.0.1:6379", ReplicaAcks: 2, TLS: tlsOn, Sentinel: config.RedisSentinel{MasterName: "fleet",
			Addrs: []string{"10.0.0.1:26379"}, Username: "watcher", PasswordFile: pw}}, func(l Login) string {
			s := l.opts.Sentinel
			if l.opts.Addr != "" || s == nil || s.Master != "fleet" || s.Username != "watcher" || s.Password != "watch" ||
				l.opts.ReplicaAcks != 2 || l.opts.TLS.ServerName != "" || l.opts.TLS.RootCAs == nil {
				return "want the sentinels with their login, each node verified for its own host"
			}
			return ""
		}},
		{"cluster", config.Redis{Addr: "127.0.0.1:6379", TLS: tlsOn, Cluster: config.RedisCluster{Addrs: []string{"10.0.0.1:7000"}}}, func(l Login) string {
			if l.opts.Addr != "" || len(l.opts.Cluster) != 1 || l.opts.TLS.ServerName != "" {
				return "want the seeds, each node verified for its own host"
			}
			return ""
		}},
	} {
		l, err := ReadLogin(tc.redis)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if msg := tc.check(l); msg != "" {
			t.Errorf("%s: %+v: %s", tc.name, l.opts, msg)
		}
	}
	_, err := ReadLogin(config.Redis{Sentinel: config.RedisSentinel{MasterName: "m", Addrs: []string{"a:1"}, PasswordFile: filepath.Join(dir, "absent")}})
	if err == nil || !strings.Contains(err.Error(), "pacing.redis.sentinel.password_file: open ") {
		t.Errorf("a missing sentinel password file: %v", err)
	}
}

// caFile writes cert to a PEM file, as pacing.redis.tls.ca_file names one.
func caFile(t *testing.T, cert *x509.Certificate) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}
