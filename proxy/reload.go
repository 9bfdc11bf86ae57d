package proxy

import (
	"context"
	"fmt"
	"net/netip"
	"path"
	"reflect"
	"strings"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/upstream"
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

// Reload applies a new configuration to the parts that can change while
// running: clients, sites, the trap guard, robots.strict_paths, egress,
// mitm.skip_hosts, identification and the parent proxy (upstream; new
// connections use the new one). Listen addresses, the CA, the audit
// log path and the robots.txt cache settings need a restart.
func (s *Server) Reload(cfg config.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	lists, err := s.denyLists(cfg.Egress.DenyHostsFiles)
	if err != nil {
		return err
	}
	guard, err := newGuard(cfg.Egress, lists, s.dnsOpt, s.dialOpt, s.selfAddrs())
	if err != nil {
		return err
	}
	parent, err := upstream.NewParent(cfg.Upstream, s.roots)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	sg, err := upstream.LoadSigners(&cfg)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	governor := s.governor // its state outlives the configuration
	if !cfg.Pacing.Backoff.Enabled && cfg.Pacing.Adaptive.Factor == 0 {
		governor = nil // off: requests do not even look at it
	}
	engine, err := policy.New(policy.Config{
		Resolver:      s.resolver,
		TDMRep:        s.tdmrep,
		TDMUnknown:    cfg.Usage.OnUnknown,
		RSL:           s.rsl,
		LicenseServer: cfg.Usage.OnLicenseServer,
		RSLUnstated:   cfg.Usage.RSLUnstatedUsage,
		StrictPaths:   cfg.Robots.StrictPaths,
		ScanHTML:      cfg.Usage.ScanHTML,
		Clients:       cfg.Clients,
		Auth:          cfg.Auth,
		DenyUnmatched: cfg.ClientsDefault == config.ClientsDeny,
		Sites:         cfg.Sites,
		Trap:          cfg.Trap,
		Pacer: pacing.New(pacing.Options{
			Store:          s.paceStore,
			MaxWait:        cfg.Pacing.MaxWait.Duration(),
			MaxConcurrency: cfg.Pacing.MaxConcurrency,
			// A shared store takes slots beyond it for corrupt.
			LongestInterval: longestInterval(cfg),
			Shared:          s.fleetPermits,
			Governor:        governor,
		}),
		Governor: governor,
		Limits: pacing.Limits{
			Floor:         cfg.Pacing.DefaultDelay.Duration(),
			Max:           cfg.Pacing.MaxDelay.Duration(),
			RefuseOverMax: cfg.Pacing.OverMaxDelay == config.OverMaxDelayRefuse,
		},
		PaceByOrigin: cfg.Pacing.Key == config.KeyOrigin,
	})
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	s.governor.SetParams(governorParams(cfg.Pacing))
	if old := s.settings(); old != nil {
		if keys := restartOnlyChanges(&old.cfg, &cfg); len(keys) > 0 {
			s.log.Warn("configuration reloaded, but these keys keep their running values until a restart", "keys", keys)
		}
	}
	s.current.Store(&settings{cfg: cfg, engine: engine, guard: guard, parent: parent, signers: sg})
	return nil
}

func (s *Server) settings() *settings { return s.current.Load() }

func newGuard(e config.Egress, lists *egress.DenyLists, r egress.Resolver, dial egress.DialFunc, self []netip.AddrPort) (*egress.Guard, error) {
	g := &egress.Guard{
		BlockPrivate: e.BlockPrivateNetworks, Resolver: r, Dial: dial, DialTimeout: dialTimeout,
		AllowHosts: lower(e.AllowHosts), DenyHosts: lower(e.DenyHosts), DenyLists: lists, Self: self,
		AllowPorts: ports(e.AllowPorts), TunnelPorts: ports(e.TunnelPorts),
	}
	for _, c := range e.AllowNetworks {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("proxy: egress.allow_networks: %w", err)
		}
		g.AllowNetworks = append(g.AllowNetworks, p.Masked())
	}
	return g, nil
}

// route is the upstream side's view of the running configuration.
func (s *Server) route() upstream.Route {
	st := s.settings()
	return upstream.Route{Guard: st.guard, Parent: st.parent}
}

// ports converts validated port numbers.
func ports(ps []int) []uint16 {
	out := make([]uint16, len(ps))
	for i, p := range ps {
		out[i] = uint16(p)
	}
	return out
}

func lower(ss []string) []string {
	out := make([]string, len(ss))
	for i, v := range ss {
		out[i] = strings.ToLower(v)
	}
	return out
}

// mitmHost reports whether CONNECTs to host are intercepted.
func (st *settings) mitmHost(host string) bool {
	if !st.cfg.MITM.Enabled {
		return false
	}
	for _, glob := range st.cfg.MITM.SkipHosts {
		if ok, _ := path.Match(glob, host); ok {
			return false
		}
	}
	return true
}

// checkDestination applies the port rules and the egress guard to a
// destination before anything is sent to it.
func (s *Server) checkDestination(ctx context.Context, o origin.Origin, blindTunnel bool) error {
	g := s.settings().guard
	if err := g.CheckPort(o.Port, blindTunnel); err != nil {
		return err
	}
	return g.CheckHost(ctx, o.Host, o.Port)
}
