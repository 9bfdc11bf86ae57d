package proxy

import (
	"reflect"

	"github.com/robotsgate/robotsgate/config"
)

// restartOnly are the keys a reload cannot apply: the listeners, the CA,
// the audit log's path, the pacing store and the robots.txt resolver are
// built once, at start. Each entry reads its key's value.
var restartOnly = []struct {
	key string
	get func(*config.Config) any
}{
	{"state_dir", func(c *config.Config) any { return c.StateDir }},
	{"listen", func(c *config.Config) any { return c.Listen }},
	{"admin_listen", func(c *config.Config) any { return c.AdminListen }},
	{"admin_hosts", func(c *config.Config) any { return c.AdminHosts }},
	{"admin_auth", func(c *config.Config) any { return c.AdminAuth }},
	{"memory_limit", func(c *config.Config) any { return c.MemoryLimit }},
	{"mitm.enabled", func(c *config.Config) any { return c.MITM.Enabled }},
	{"mitm.ca_cert", func(c *config.Config) any { return c.MITM.CACert }},
	{"mitm.ca_key", func(c *config.Config) any { return c.MITM.CAKey }},
	{"mitm.upstream_ca", func(c *config.Config) any { return c.MITM.UpstreamCA }},
	{"log.audit", func(c *config.Config) any { return c.Log.Audit }},
	{"log.evidence_key", func(c *config.Config) any { return c.Log.EvidenceKey }},
	{"log.audit_fsync", func(c *config.Config) any { return c.Log.AuditFsync }},
	{"log.checkpoint_every", func(c *config.Config) any { return c.Log.CheckpointEvery }},
	{"log.checkpoint_records", func(c *config.Config) any { return c.Log.CheckpointRecords }},
	{"log.witness.url", func(c *config.Config) any { return c.Log.Witness.URL }},
	{"log.witness.key", func(c *config.Config) any { return c.Log.Witness.Key }},
	{"log.witness.ca", func(c *config.Config) any { return c.Log.Witness.CA }},
	{"key_permissions", func(c *config.Config) any { return c.KeyPermissions }},
	{"archive.dir", func(c *config.Config) any { return c.Archive.Dir }},
	{"pacing.store", func(c *config.Config) any { return c.Pacing.Store }},
	{"pacing.redis.addr", func(c *config.Config) any { return c.Pacing.Redis.Addr }},
	{"pacing.redis.sentinel", func(c *config.Config) any { return c.Pacing.Redis.Sentinel }},
	{"pacing.redis.cluster.addrs", func(c *config.Config) any { return c.Pacing.Redis.Cluster.Addrs }},
	{"pacing.redis.replica_acks", func(c *config.Config) any { return c.Pacing.Redis.ReplicaAcks }},
	{"pacing.redis.username", func(c *config.Config) any { return c.Pacing.Redis.Username }},
	{"pacing.redis.password_file", func(c *config.Config) any { return c.Pacing.Redis.PasswordFile }},
	{"pacing.redis.db", func(c *config.Config) any { return c.Pacing.Redis.DB }},
	{"pacing.redis.key_prefix", func(c *config.Config) any { return c.Pacing.Redis.KeyPrefix }},
	{"pacing.redis.tls.enabled", func(c *config.Config) any { return c.Pacing.Redis.TLS.Enabled }},
	{"pacing.redis.tls.ca_file", func(c *config.Config) any { return c.Pacing.Redis.TLS.CAFile }},
	{"pacing.on_store_error", func(c *config.Config) any { return c.Pacing.OnStoreError }},
	{"robots.fetch_user_agent", func(c *config.Config) any { return c.Robots.FetchUserAgent }},
	{"robots.fetch_timeout", func(c *config.Config) any { return c.Robots.FetchTimeout }},
	{"robots.cache_entries", func(c *config.Config) any { return c.Robots.CacheEntries }},
	{"robots.cache_bytes", func(c *config.Config) any { return c.Robots.CacheBytes }},
	{"usage.cache_bytes", func(c *config.Config) any { return c.Usage.CacheBytes }},
	{"robots.min_ttl", func(c *config.Config) any { return c.Robots.MinTTL }},
	{"robots.max_ttl", func(c *config.Config) any { return c.Robots.MaxTTL }},
	{"robots.retry_min", func(c *config.Config) any { return c.Robots.RetryMin }},
	{"robots.retry_max", func(c *config.Config) any { return c.Robots.RetryMax }},
	{"timeouts.client_header", func(c *config.Config) any { return c.Timeouts.ClientHeader }},
	{"timeouts.client_idle", func(c *config.Config) any { return c.Timeouts.ClientIdle }},
	{"timeouts.client_body", func(c *config.Config) any { return c.Timeouts.ClientBody }},
	{"transparent.http_listen", func(c *config.Config) any { return c.Transparent.HTTPListen }},
	{"transparent.tls_listen", func(c *config.Config) any { return c.Transparent.TLSListen }},
	{"transparent.mark", func(c *config.Config) any { return c.Transparent.Mark }},
	{"socks.listen", func(c *config.Config) any { return c.SOCKS.Listen }},
	{"connections.max_per_listener", func(c *config.Config) any { return c.Connections.MaxPerListener }},
	{"connections.max_per_client", func(c *config.Config) any { return c.Connections.MaxPerClient }},
}

// restartOnlyChanges names the keys that differ between the running
// configuration and a reloaded one but take effect only after a restart.
func restartOnlyChanges(running, reloaded *config.Config) []string {
	var keys []string
	for _, k := range restartOnly {
		if !reflect.DeepEqual(k.get(running), k.get(reloaded)) {
			keys = append(keys, k.key)
		}
	}
	return keys
}
