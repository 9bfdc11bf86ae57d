package config

import (
	"encoding/base64"
	"fmt"
	"github.com/robotsgate/robotsgate/botauth"
	"github.com/robotsgate/robotsgate/paycrawl"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/rsl"
)

// Validate checks every value and every combination of values, and reports
// all problems found (joined, each an *Error naming its key). Load and Parse
// call it, adding file and line to each message; call it yourself for a
// Config built or changed in code.
func (c *Config) Validate() error {
	v := &validator{}
	v.validate(c)
	if len(v.errs) > 0 {
		return joinErrors(v.errs)
	}
	return nil
}

type validator struct {
	file  string
	lines map[string]int  // dotted path -> line, from the decoder; may be nil
	skip  map[string]bool // paths that failed to decode: already reported
	errs  []*Error
}

// add reports a problem with key, located at the line of key or, if the file
// did not set key, of its nearest enclosing key that it did set.
func (v *validator) add(key, format string, args ...any) {
	line := 0
	for k := key; k != ""; k = parent(k) {
		if v.skip[k] {
			return
		}
		if l, ok := v.lines[k]; ok && line == 0 {
			line = l
		}
	}
	v.errs = append(v.errs, &Error{File: v.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// set reports whether the file set key.
func (v *validator) set(key string) bool {
	_, ok := v.lines[key]
	return ok
}

// parent strips the last ".name" or "[i]" of a dotted path.
func parent(key string) string {
	if i := strings.LastIndexAny(key, ".["); i >= 0 {
		return key[:i]
	}
	return ""
}

func (v *validator) validate(c *Config) {
	if c.Listen == "" {
		v.add("listen", "required (host:port, e.g. 127.0.0.1:8080)")
	} else if msg := checkHostPort(c.Listen, 0); msg != "" {
		v.add("listen", "%s", msg)
	}
	if c.AdminListen != "" {
		if msg := checkHostPort(c.AdminListen, 0); msg != "" {
			v.add("admin_listen", "%s", msg)
		} else if c.AdminListen == c.Listen && !strings.HasSuffix(c.Listen, ":0") {
			v.add("admin_listen", "same address as listen (use another port, or \"\" to disable)")
		}
	}
	v.globs("admin_hosts", c.AdminHosts)
	if c.PACProxy != "" {
		if msg := checkHostPort(c.PACProxy, 1); msg != "" {
			v.add("pac_proxy", "%s", msg)
		} else if host, _, _ := net.SplitHostPort(c.PACProxy); host == "" {
			v.add("pac_proxy", "%q names no host: clients need the proxy's name or address", c.PACProxy)
		}
	}
	if c.AdminAuth && c.Auth.Htpasswd == "" {
		v.add("admin_auth", "needs auth.htpasswd: the admin listener's users are its users")
	}
	if c.MemoryLimit > 0 && c.MemoryLimit < MinMemoryLimit {
		v.add("memory_limit", "at least %s, got %s (or auto, or off)", ByteSize(MinMemoryLimit), ByteSize(c.MemoryLimit))
	}
	v.listeners(c)
	v.robots(&c.Robots)
	v.egress(&c.Egress)
	v.mitm(&c.MITM)
	v.pacing(&c.Pacing)
	v.upstream(&c.Upstream)
	if msg := checkHeaderText(c.Auth.Realm); c.Auth.Realm == "" || msg != "" || strings.ContainsAny(c.Auth.Realm, `"\`) {
		v.add("auth.realm", "invalid realm %q (want non-empty text without quotes or backslashes)", c.Auth.Realm)
	}
	v.enum("clients_default", string(c.ClientsDefault), ClientsAllow, ClientsDeny)
	for i := range c.Clients {
		v.client(fmt.Sprintf("clients[%d]", i), &c.Clients[i], c.Auth.Htpasswd != "")
		v.clientBotAuth(fmt.Sprintf("clients[%d]", i), &c.Clients[i], c.BotAuth.SignatureAgent != "")
	}
	v.botAuth(&c.BotAuth)
	for i := range c.Sites {
		v.site(fmt.Sprintf("sites[%d]", i), &c.Sites[i])
	}
	v.enum("usage.on_unknown", string(c.Usage.OnUnknown), UsageUnknownRefuse, UsageUnknownAllow)
	v.enum("usage.on_license_server", string(c.Usage.OnLicenseServer), UsageUnknownRefuse, UsageUnknownAllow)
	v.enum("usage.rsl_unstated_usage", string(c.Usage.RSLUnstatedUsage), RSLUnstatedRefuse, RSLUnstatedGrant)
	if c.Usage.CacheBytes < 1<<20 {
		v.add("usage.cache_bytes", "must be at least 1MiB, got %s", c.Usage.CacheBytes)
	}
	if c.Usage.LicenseFetchesPerResponse < 1 {
		v.add("usage.license_fetches_per_response", "must be >= 1, got %d", c.Usage.LicenseFetchesPerResponse)
	}
	if n := c.Usage.LicenseFetchesPerOrigin; n < 1 || n > 100 {
		v.add("usage.license_fetches_per_origin", "must be 1..100, got %d", n)
	}
	if c.Connections.MaxPerListener < 0 {
		v.add("connections.max_per_listener", "must be >= 0 (0: no cap), got %d", c.Connections.MaxPerListener)
	}
	if c.Connections.MaxPerClient < 0 {
		v.add("connections.max_per_client", "must be >= 0 (0: no cap), got %d", c.Connections.MaxPerClient)
	}
	v.trap(&c.Trap)
	if f := c.Identify.From; f != "" {
		if a, err := mail.ParseAddress(f); err != nil || checkHeaderText(f) != "" {
			v.add("identify.from", "invalid mail address %q", f)
		} else if a.Address == "" {
			v.add("identify.from", "invalid mail address %q", f)
		}
	}
	if msg := checkHeaderText(c.Identify.UserAgentSuffix); msg != "" {
		v.add("identify.user_agent_suffix", "%s", msg)
	}
	v.positive("timeouts.client_header", c.Timeouts.ClientHeader)
	v.positive("timeouts.client_idle", c.Timeouts.ClientIdle)
	v.positive("timeouts.client_body", c.Timeouts.ClientBody)
	v.positive("log.checkpoint_every", c.Log.CheckpointEvery)
	if c.Log.CheckpointRecords <= 0 {
		v.add("log.checkpoint_records", "must be > 0, got %d", c.Log.CheckpointRecords)
	}
	if c.Log.Audit != "" && c.Log.Audit != "-" && c.Log.EvidenceKey == "" {
		v.add("log.evidence_key", "required with an audit log file: it signs the log's checkpoints")
	}
	v.witness(&c.Log)
	v.enum("key_permissions", string(c.KeyPermissions), KeyPermissionsWarn, KeyPermissionsRefuse)
	if c.Auth.FailureLimit < 0 {
		v.add("auth.failure_limit", "must be >= 0 (0: no limit), got %d", c.Auth.FailureLimit)
	}
	v.enum("log.level", string(c.Log.Level), LevelDebug, LevelInfo, LevelWarn, LevelError)
	v.enum("log.audit_on_error", string(c.Log.AuditOnError), AuditContinue, AuditRefuse)
}

// witness checks log.witness: an https URL to a host, the witness's key,
// and an audit log with an evidence key whose checkpoints it witnesses.
func (v *validator) witness(l *Log) {
	w := &l.Witness
	if w.URL == "" {
		if w.Key != "" || w.CA != "" {
			v.add("log.witness.url", "required with log.witness.key and log.witness.ca")
		}
		return
	}
	u, err := url.Parse(w.URL)
	switch {
	case err != nil || u.Scheme != "https" || u.Host == "" || u.Hostname() == "":
		v.add("log.witness.url", "want an https:// URL of the witness, got %q", w.URL)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		v.add("log.witness.url", "want a base URL without credentials, query or fragment, got %q", w.URL)
	}
	if raw, err := base64.StdEncoding.DecodeString(w.Key); w.Key == "" || err != nil || len(raw) != 32 {
		v.add("log.witness.key", "want the witness's public key, base64 of 32 bytes as `robotsgate witness` prints it, got %q", w.Key)
	}
	if l.Audit == "" || l.EvidenceKey == "" {
		v.add("log.witness.url", "needs an audit log (log.audit) and its evidence key (log.evidence_key): it witnesses their checkpoints")
	}
}

// listeners checks the SOCKS5 and transparent listeners' addresses: each
// valid and none the same as another listener's (port 0 excepted).
func (v *validator) listeners(c *Config) {
	if m := c.Transparent.Mark; m < 0 || m > 1<<32-1 {
		v.add("transparent.mark", "must be 0..4294967295, got %d", m)
	}
	seen := map[string]string{c.Listen: "listen", c.AdminListen: "admin_listen"}
	for _, l := range []struct{ key, addr string }{
		{"transparent.http_listen", c.Transparent.HTTPListen},
		{"transparent.tls_listen", c.Transparent.TLSListen},
		{"socks.listen", c.SOCKS.Listen},
	} {
		if l.addr == "" {
			continue
		}
		if msg := checkHostPort(l.addr, 0); msg != "" {
			v.add(l.key, "%s", msg)
			continue
		}
		if other, ok := seen[l.addr]; ok && !strings.HasSuffix(l.addr, ":0") {
			v.add(l.key, "same address as %s (use another port)", other)
		}
		seen[l.addr] = l.key
	}
}

func (v *validator) robots(r *Robots) {
	if r.FetchUserAgent == "" {
		v.add("robots.fetch_user_agent", "required (e.g. \"robotsgate/1.0\")")
	} else if msg := checkHeaderText(r.FetchUserAgent); msg != "" {
		v.add("robots.fetch_user_agent", "%s", msg)
	}
	v.positive("robots.fetch_timeout", r.FetchTimeout)
	if r.CacheBytes < 1<<20 {
		v.add("robots.cache_bytes", "must be at least 1MiB, got %s", r.CacheBytes)
	}
	if r.ColdFetchesPerClient < 0 {
		v.add("robots.cold_fetches_per_client", "must be >= 0 (0: no bound), got %d", r.ColdFetchesPerClient)
	}
	if r.CacheEntries <= 0 {
		v.add("robots.cache_entries", "must be > 0, got %d", r.CacheEntries)
	}
	v.nonNegative("robots.min_ttl", r.MinTTL)
	v.positive("robots.max_ttl", r.MaxTTL)
	if r.MinTTL >= 0 && r.MaxTTL > 0 && r.MinTTL > r.MaxTTL {
		if v.set("robots.max_ttl") && !v.set("robots.min_ttl") {
			v.add("robots.max_ttl", "%s is shorter than robots.min_ttl (%s)", r.MaxTTL, r.MinTTL)
		} else {
			v.add("robots.min_ttl", "%s is longer than robots.max_ttl (%s)", r.MinTTL, r.MaxTTL)
		}
	}
	v.positive("robots.retry_min", r.RetryMin)
	v.positive("robots.retry_max", r.RetryMax)
	if r.RetryMin > 0 && r.RetryMax > 0 && r.RetryMin > r.RetryMax {
		if v.set("robots.retry_max") && !v.set("robots.retry_min") {
			v.add("robots.retry_max", "%s is shorter than robots.retry_min (%s)", r.RetryMax, r.RetryMin)
		} else {
			v.add("robots.retry_min", "%s is longer than robots.retry_max (%s)", r.RetryMin, r.RetryMax)
		}
	}
}

func (v *validator) egress(e *Egress) {
	for i, s := range e.AllowNetworks {
		if _, err := netip.ParsePrefix(s); err != nil {
			v.add(fmt.Sprintf("egress.allow_networks[%d]", i), "invalid CIDR %q (want e.g. 10.1.0.0/16 or fd00::/8)", s)
		}
	}
	v.globs("egress.allow_hosts", e.AllowHosts)
	v.globs("egress.deny_hosts", e.DenyHosts)
	for i, f := range e.DenyHostsFiles {
		key := fmt.Sprintf("egress.deny_hosts_files[%d]", i)
		switch {
		case strings.TrimSpace(f) == "":
			v.add(key, "empty path (want a file of hosts, one per line)")
		case slices.Contains(e.DenyHostsFiles[:i], f):
			v.add(key, "%q is listed twice", f)
		}
	}
	v.ports("egress.allow_ports", e.AllowPorts)
	v.ports("egress.tunnel_ports", e.TunnelPorts)
}

func (v *validator) mitm(m *MITM) {
	if m.Enabled {
		if m.CACert == "" {
			v.add("mitm.ca_cert", "required when mitm.enabled is true")
		}
		if m.CAKey == "" {
			v.add("mitm.ca_key", "required when mitm.enabled is true")
		}
	}
	v.globs("mitm.skip_hosts", m.SkipHosts)
}

func (v *validator) pacing(p *Pacing) {
	v.nonNegative("pacing.max_wait", p.MaxWait)
	v.nonNegative("pacing.default_delay", p.DefaultDelay)
	v.nonNegative("pacing.max_delay", p.MaxDelay)
	if p.MaxDelay > 0 && p.DefaultDelay > p.MaxDelay {
		v.add("pacing.default_delay", "%s is longer than pacing.max_delay (%s)", p.DefaultDelay, p.MaxDelay)
	}
	v.enum("pacing.over_max_delay", string(p.OverMaxDelay), OverMaxDelayClamp, OverMaxDelayRefuse)
	v.enum("pacing.key", string(p.Key), KeyOriginGroup, KeyOrigin)
	if p.MaxConcurrency < 0 {
		v.add("pacing.max_concurrency", "must be >= 0 (0 = unlimited), got %d", p.MaxConcurrency)
	}
	v.enum("pacing.store", string(p.Store), StoreMemory, StoreRedis)
	v.redis(&p.Redis, p.Store == StoreRedis)
	v.enum("pacing.on_store_error", string(p.OnStoreError), OnStoreErrorRefuse, OnStoreErrorLocal)
	v.backoff(&p.Backoff)
	v.nonNegative("pacing.adaptive.min", p.Adaptive.Min)
	v.nonNegative("pacing.adaptive.max", p.Adaptive.Max)
	if p.Adaptive.Max < p.Adaptive.Min {
		v.add("pacing.adaptive.max", "%s is shorter than pacing.adaptive.min (%s)", p.Adaptive.Max, p.Adaptive.Min)
	}
}

func (v *validator) redis(r *Redis, used bool) {
	sentinel, cluster := r.Sentinel.MasterName != "" || len(r.Sentinel.Addrs) > 0, len(r.Cluster.Addrs) > 0
	switch {
	case sentinel && cluster:
		v.add("pacing.redis.cluster", "not with pacing.redis.sentinel: a fleet's Redis is one server, a Sentinel primary or a Cluster")
	case (sentinel || cluster) && v.set("pacing.redis.addr"):
		v.add("pacing.redis.addr", "not with pacing.redis.sentinel or pacing.redis.cluster, which find the nodes themselves")
	case sentinel || cluster:
	case r.Addr == "" && used:
		v.add("pacing.redis.addr", "required when pacing.store is redis")
	case r.Addr != "":
		if msg := checkHostPort(r.Addr, 1); msg != "" {
			v.add("pacing.redis.addr", "%s", msg)
		}
	}
	if sentinel {
		v.redisSentinel(&r.Sentinel)
	}
	if cluster {
		v.redisAddrs("pacing.redis.cluster.addrs", r.Cluster.Addrs)
		if r.DB != 0 {
			v.add("pacing.redis.db", "must be 0 with pacing.redis.cluster (a Redis Cluster has only database 0), got %d", r.DB)
		}
	}
	if r.ReplicaAcks < 0 || r.ReplicaAcks > maxReplicaAcks {
		v.add("pacing.redis.replica_acks", "must be 0 to %d, got %d", maxReplicaAcks, r.ReplicaAcks)
	}
	v.redisUser("pacing.redis", r.Username, r.PasswordFile)
	if r.DB < 0 {
		v.add("pacing.redis.db", "must be >= 0, got %d", r.DB)
	}
	if msg := checkKeyPrefix(r.KeyPrefix); msg != "" {
		v.add("pacing.redis.key_prefix", "%s", msg)
	}
	if r.TLS.CAFile != "" && !r.TLS.Enabled {
		v.add("pacing.redis.tls.ca_file", "needs pacing.redis.tls.enabled: true")
	}
}

// maxReplicaAcks bounds pacing.redis.replica_acks: more replicas than a
// primary has in any real deployment.
const maxReplicaAcks = 16

// maxRedisAddrs bounds the sentinels' and a cluster's seed addresses.
const maxRedisAddrs = 64

// redisSentinel checks pacing.redis.sentinel.
func (v *validator) redisSentinel(s *RedisSentinel) {
	switch {
	case s.MasterName == "":
		v.add("pacing.redis.sentinel.master_name", "required with pacing.redis.sentinel.addrs (the name the sentinels monitor the primary under)")
	case len(s.MasterName) > 200 || strings.IndexFunc(s.MasterName, func(c rune) bool { return c <= ' ' || c == 0x7f }) >= 0:
		v.add("pacing.redis.sentinel.master_name", "invalid master name %q (1 to 200 characters, no spaces or control characters)", s.MasterName)
	}
	if len(s.Addrs) == 0 {
		v.add("pacing.redis.sentinel.addrs", "required with pacing.redis.sentinel.master_name (host:port of at least one sentinel; give three or more)")
	}
	v.redisAddrs("pacing.redis.sentinel.addrs", s.Addrs)
	v.redisUser("pacing.redis.sentinel", s.Username, s.PasswordFile)
}

// redisAddrs checks a list of Redis nodes' host:port.
func (v *validator) redisAddrs(key string, addrs []string) {
	if len(addrs) > maxRedisAddrs {
		v.add(key, "at most %d addresses, got %d", maxRedisAddrs, len(addrs))
		return
	}
	for i, a := range addrs {
		k := fmt.Sprintf("%s[%d]", key, i)
		if msg := checkHostPort(a, 1); msg != "" {
			v.add(k, "%s", msg)
		} else if j := slices.Index(addrs, a); j < i {
			v.add(k, "%s is listed twice (also %s[%d])", a, key, j)
		}
	}
}

// redisUser checks a Redis login: section.username and
// section.password_file.
func (v *validator) redisUser(section, username, passwordFile string) {
	if strings.IndexFunc(username, func(c rune) bool { return c <= ' ' || c == 0x7f }) >= 0 {
		v.add(section+".username", "invalid user name %q (no spaces or control characters)", username)
	}
	if username != "" && passwordFile == "" {
		v.add(section+".password_file", "required with %s.username (a file holding the user's password)", section)
	}
}

// checkKeyPrefix returns what is wrong with a Redis key prefix, or "": it
// must be 1 to 100 bytes of printable ASCII other than a space, the glob
// characters of ACL key patterns and the braces of Redis Cluster's hash
// tags (each origin's keys are tagged with the origin in braces: a brace
// in the prefix would take its place).
func checkKeyPrefix(p string) string {
	const want = `(want 1 to 100 printable ASCII characters without spaces or * ? [ ] \ { }, e.g. "robotsgate:")`
	if p == "" || len(p) > 100 {
		return fmt.Sprintf("invalid key prefix %q %s", p, want)
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`*?[]\{}`, c) >= 0 {
			return fmt.Sprintf("invalid key prefix %q %s", p, want)
		}
	}
	return ""
}

// backoffPolicy checks a sites or clients entry's backoff ("" is obey).
func (v *validator) backoffPolicy(key string, p BackoffPolicy) {
	if p != "" {
		v.enum(key, string(p), BackoffObey, BackoffIgnore)
	}
}

// backoff checks the pause of origins that answer 429 or 503.
func (v *validator) backoff(b *Backoff) {
	for i, s := range b.Statuses {
		if s != 429 && (s < 500 || s > 599) {
			v.add(fmt.Sprintf("pacing.backoff.statuses[%d]", i), "%d is not 429 or a 5xx status", s)
		}
	}
	if b.Initial <= 0 {
		v.add("pacing.backoff.initial", "must be > 0, got %s", b.Initial)
	}
	if b.Factor < 1 {
		v.add("pacing.backoff.factor", "must be >= 1 (1: every pause as long as the first), got %v", float64(b.Factor))
	}
	if b.Max < b.Initial {
		v.add("pacing.backoff.max", "%s is shorter than pacing.backoff.initial (%s)", b.Max, b.Initial)
	}
	if b.RetryAfterMax < b.Max {
		v.add("pacing.backoff.retry_after_max", "%s is shorter than pacing.backoff.max (%s): an origin's own Retry-After would be cut below a computed pause", b.RetryAfterMax, b.Max)
	}
	for i, s := range b.Failures.Statuses {
		key := fmt.Sprintf("pacing.backoff.failures.statuses[%d]", i)
		switch {
		case s < 500 || s > 599:
			v.add(key, "%d is not a 5xx status", s)
		case slices.Contains(b.Statuses, s):
			v.add(key, "%d is also in pacing.backoff.statuses, which pause at the first answer", s)
		}
	}
	if b.Failures.InARow < 0 {
		v.add("pacing.backoff.failures.in_a_row", "must be >= 0 (0 counts none), got %d", b.Failures.InARow)
	}
}

func (v *validator) upstream(u *Upstream) {
	if u.Proxy != "" {
		if msg := checkProxyURL(u.Proxy); msg != "" {
			v.add("upstream.proxy", "%s", msg)
		}
	}
	v.globs("upstream.no_proxy", u.NoProxy)
}

// checkProxyURL returns what is wrong with a parent proxy URL, or "". The
// messages never repeat a password.
func checkProxyURL(s string) string {
	const want = "want http://host:port or https://host:port, optionally with user:password@"
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Sprintf("invalid URL %q (%s)", redactURL(s), want)
	}
	shown := u.Redacted()
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("invalid URL %q: scheme must be http or https (%s)", shown, want)
	case u.Opaque != "" || u.Host == "":
		return fmt.Sprintf("invalid URL %q: no host (%s)", shown, want)
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return fmt.Sprintf("invalid URL %q: a proxy URL has no path, query or fragment (%s)", shown, want)
	}
	if u.Port() == "" {
		return fmt.Sprintf("invalid URL %q: the port is required (%s)", shown, want)
	}
	if msg := checkHostPort(u.Host, 1); msg != "" || u.Hostname() == "" {
		return fmt.Sprintf("invalid URL %q: bad host:port %q (%s)", shown, u.Host, want)
	}
	return ""
}

// redactURL returns rawURL with the password of its user information, if
// any, replaced by "xxxxx", for logs and messages. It works on URLs that do
// not parse, too.
func redactURL(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Redacted()
	}
	rest := rawURL
	prefix := ""
	if i := strings.Index(rest, "://"); i >= 0 {
		prefix, rest = rest[:i+3], rest[i+3:]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return rawURL
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		return rawURL
	}
	return prefix + user + ":xxxxx" + rest[at:]
}

func (v *validator) client(key string, c *Client, htpasswd bool) {
	if c.CIDR == "" && c.User == "" {
		v.add(key, "a client entry needs cidr or user (or both)")
	}
	if c.CIDR != "" {
		if _, err := netip.ParsePrefix(c.CIDR); err != nil {
			v.add(key+".cidr", "invalid CIDR %q (want e.g. 10.0.0.0/8 or 2001:db8::/32)", c.CIDR)
		}
	}
	v.backoffPolicy(key+".backoff", c.Backoff)
	if c.User != "" && (strings.Contains(c.User, ":") || checkHeaderText(c.User) != "") {
		v.add(key+".user", "invalid user name %q (no colons or control characters)", c.User)
	}
	switch {
	case c.PasswordBcrypt != "" && c.User == "":
		v.add(key+".password_bcrypt", "set without user")
	case c.PasswordBcrypt != "" && !isBcrypt(c.PasswordBcrypt):
		v.add(key+".password_bcrypt", "not a bcrypt hash (want $2a$, $2b$ or $2y$, cost and 53 characters, e.g. from htpasswd -nbB user password)")
	case c.PasswordBcrypt == "" && c.User != "" && !htpasswd:
		v.add(key+".password_bcrypt", "required for user %q (or set auth.htpasswd)", c.User)
	}
	v.enum(key+".mode", string(c.Mode), ModeEnforce, ModeMonitor, ModeBypass)
	if c.MonitorHeader && c.Mode != ModeMonitor {
		v.add(key+".monitor_header", "only with mode: monitor (this entry is %s)", c.Mode)
	}
	if c.Agent != "" && !isProductToken(c.Agent) {
		v.add(key+".agent", "invalid agent %q (want a product token of letters, '-' and '_', e.g. ResearchBot)", c.Agent)
	}
	for i, p := range c.Purposes {
		if !isPurpose(p) {
			v.add(fmt.Sprintf("%s.purposes[%d]", key, i), "invalid purpose %q (want a lower-case token such as train-ai or search)", p)
		}
	}
	v.clientLicence(key, c)
}

// clientLicence checks what a clients entry declares for RSL terms.
func (v *validator) clientLicence(key string, c *Client) {
	if c.RSLUser != "" && !slices.Contains(rsl.UserTypes, c.RSLUser) {
		v.add(key+".rsl_user", "invalid user type %q (want one of %s)", c.RSLUser, strings.Join(rsl.UserTypes, ", "))
	}
	if c.Country != "" && !isCountry(c.Country) {
		v.add(key+".country", "invalid country %q (want an ISO 3166-1 alpha-2 code in upper case, e.g. FR)", c.Country)
	}
	for i, p := range c.AcceptPayment {
		if p != rsl.PaymentAll && (p == "free" || !slices.Contains(rsl.PaymentTypes, p)) {
			v.add(fmt.Sprintf("%s.accept_payment[%d]", key, i), "invalid payment type %q (want one of %s, or all)",
				p, strings.Join(rsl.PaymentTypes[:len(rsl.PaymentTypes)-1], ", "))
		}
	}
	for i, p := range c.AcceptReporting {
		if u, err := url.Parse(p); p != rsl.ReportingAll && (err != nil || !u.IsAbs()) {
			v.add(fmt.Sprintf("%s.accept_reporting[%d]", key, i), "invalid reporting profile %q (want an absolute URI, or all)", p)
		}
	}
}

// isCountry reports whether s is an ISO 3166-1 alpha-2 code: two
// upper-case letters.
func isCountry(s string) bool {
	return len(s) == 2 && 'A' <= s[0] && s[0] <= 'Z' && 'A' <= s[1] && s[1] <= 'Z'
}

// botAuth checks the gateway's Web Bot Auth signing.
func (v *validator) botAuth(b *BotAuth) {
	v.enum("bot_auth.signature_agent_form", b.SignatureAgentForm, botauth.FormTyped, botauth.FormURL, botauth.FormString)
	if t := b.ProductToken; t != "" && !isProductToken(t) {
		v.add("bot_auth.product_token", "invalid product token %q (RFC 9309 Section 2.2.1: letters, '_' and '-' only)", t)
	}
	if p := b.Purpose; p != "" && !isPurpose(p) {
		v.add("bot_auth.purpose", "invalid purpose %q (want a lower-case token such as search or train-ai)", p)
	}
	if b.SignatureAgent == "" {
		return
	}
	if _, err := botauth.ParseAgent(b.SignatureAgent, botauth.FormTyped); err != nil {
		v.add("bot_auth.signature_agent", "%v", strings.TrimPrefix(err.Error(), "botauth: "))
	}
	if b.Key == "" {
		v.add("bot_auth.key", "required with bot_auth.signature_agent: the signing key's file")
	}
	if msg := checkHeaderText(b.Contact); msg != "" {
		v.add("bot_auth.contact", "%s", msg)
	}
}

// clientBotAuth checks a clients entry's own signing and maximum price;
// gateway says whether bot_auth signs for it otherwise.
func (v *validator) clientBotAuth(key string, c *Client, gateway bool) {
	switch {
	case c.SignatureAgent != "":
		if _, err := botauth.ParseAgent(c.SignatureAgent, botauth.FormTyped); err != nil {
			v.add(key+".signature_agent", "%v", strings.TrimPrefix(err.Error(), "botauth: "))
		}
		if c.SignKey == "" {
			v.add(key+".sign_key", "required with signature_agent: the signing key's file (a bare name is in state_dir)")
		}
	case c.SignKey != "":
		v.add(key+".sign_key", "set without signature_agent")
	}
	if c.MaxPrice != "" {
		if _, err := paycrawl.Parse(c.MaxPrice); err != nil {
			v.add(key+".max_price", "invalid price %q (want a currency code and an amount, e.g. USD 0.05)", c.MaxPrice)
		} else if c.SignatureAgent == "" && !gateway {
			v.add(key+".max_price", "needs signing (bot_auth.signature_agent or this entry's signature_agent): pay per crawl pays only signed requests")
		}
	}
}

func (v *validator) site(key string, s *Site) {
	if len(s.Hosts) == 0 {
		v.add(key+".hosts", "required: at least one host glob (e.g. \"*.example.com\")")
	}
	v.globs(key+".hosts", s.Hosts)
	v.enum(key+".robots", string(s.Robots), RobotsObey, RobotsIgnore)
	v.nonNegative(key+".delay", s.Delay)
	v.backoffPolicy(key+".backoff", s.Backoff)
}

func (v *validator) trap(t *Trap) {
	for _, f := range []struct {
		key string
		n   int
	}{
		{"trap.max_url_length", t.MaxURLLength},
		{"trap.max_repeated_segments", t.MaxRepeatedSegments},
		{"trap.page_budget", t.PageBudget},
	} {
		if f.n < 0 {
			v.add(f.key, "must be >= 0 (0 = no limit), got %d", f.n)
		}
	}
	v.nonNegative("trap.budget_window", t.BudgetWindow)
	if t.PageBudget > 0 && t.BudgetWindow == 0 {
		v.add("trap.budget_window", "must be > 0 when trap.page_budget is set")
	}
}

func (v *validator) enum(key, val string, allowed ...any) {
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = fmt.Sprint(a)
		if names[i] == val {
			return
		}
	}
	want := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	v.add(key, "invalid value %q (want %s)", val, want)
}

func (v *validator) positive(key string, d Duration) {
	if d <= 0 {
		v.add(key, "must be > 0, got %s", d)
	}
}

func (v *validator) nonNegative(key string, d Duration) {
	if d < 0 {
		v.add(key, "must not be negative, got %s", d)
	}
}

func (v *validator) ports(key string, ports []int) {
	for i, p := range ports {
		if p < 1 || p > 65535 {
			v.add(fmt.Sprintf("%s[%d]", key, i), "invalid port %d (want 1..65535)", p)
		}
	}
}

// globs checks host globs and writes each as hosts are spelled (lower
// case, no trailing dot, IDNs in punycode: origin.CanonicalGlob), so that
// "bücher.example" and "evil.example." match what they name.
func (v *validator) globs(key string, globs []string) {
	for i, g := range globs {
		if msg := checkHostGlob(g); msg != "" {
			v.add(fmt.Sprintf("%s[%d]", key, i), "%s", msg)
			continue
		}
		c, err := origin.CanonicalGlob(g)
		if err != nil {
			v.add(fmt.Sprintf("%s[%d]", key, i), "%v", err)
			continue
		}
		globs[i] = c
	}
}

// checkHostPort returns what is wrong with a host:port address, or "".
// The host may be empty (all interfaces); the port must be a number from
// minPort to 65535.
func checkHostPort(s string, minPort int) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Sprintf("invalid address %q (want host:port, e.g. 127.0.0.1:8080 or [::1]:8080)", s)
	}
	if strings.ContainsAny(host, " \t/") {
		return fmt.Sprintf("invalid host %q in %q", host, s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < minPort || n > 65535 {
		return fmt.Sprintf("invalid port %q in %q (want %d..65535)", port, s, minPort)
	}
	return ""
}

// checkHostGlob returns what is wrong with a host glob, or "".
func checkHostGlob(g string) string {
	switch {
	case g == "":
		return "empty host glob"
	case strings.ContainsAny(g, "/ \t"):
		return fmt.Sprintf("invalid host glob %q (want a host such as *.example.com, not a URL)", g)
	}
	if _, err := path.Match(g, ""); err != nil {
		return fmt.Sprintf("invalid host glob %q: %v", g, err)
	}
	return ""
}

// checkHeaderText returns what is wrong with s as (part of) a header value,
// or "".
func checkHeaderText(s string) string {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 && b != '\t' || b == 0x7f {
			return fmt.Sprintf("control character in %q", s)
		}
	}
	return ""
}

// isBcrypt reports whether s has the shape of a bcrypt hash:
// "$2b$10$" followed by 53 characters of bcrypt's base64 alphabet.
func isBcrypt(s string) bool {
	if len(s) != 60 || !(strings.HasPrefix(s, "$2a$") || strings.HasPrefix(s, "$2b$") || strings.HasPrefix(s, "$2y$")) {
		return false
	}
	cost, err := strconv.Atoi(s[4:6])
	if err != nil || cost < 4 || cost > 31 || s[6] != '$' {
		return false
	}
	for _, c := range []byte(s[7:]) {
		if !(c == '.' || c == '/' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// isProductToken reports whether s is a robots.txt product token: [A-Za-z_-]+.
func isProductToken(s string) bool {
	for _, c := range []byte(s) {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '_' || c == '-') {
			return false
		}
	}
	return s != ""
}

// isPurpose reports whether s is a usage-preference name: [a-z0-9-]+,
// starting with a letter or digit.
func isPurpose(s string) bool {
	for i, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' && i > 0) {
			return false
		}
	}
	return s != ""
}
