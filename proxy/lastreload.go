package proxy

import (
	"fmt"
	"time"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/fleetredis"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/upstream"
	"github.com/robotsgate/robotsgate/witness"
)

// NoteReload records the outcome of a configuration reload (err is what
// loading and Reload returned, nil when the new configuration applied):
// for the status page's "Last reload" line and the metrics
// robotsgate_config_last_reload_successful (0 or 1) and
// robotsgate_config_last_reload_success_timestamp_seconds, the names
// Prometheus itself uses. The caller that reloads (the SIGHUP handler)
// calls it; Reload itself does not, since New calls Reload too.
func (s *Server) NoteReload(err error) {
	now := time.Now()
	s.stats.Reloaded(err, now)
	if err != nil {
		s.metrics.ReloadSuccessful.Set(0)
		return
	}
	s.metrics.ReloadSuccessful.Set(1)
	s.metrics.ReloadTimestamp.Set(float64(now.UnixNano()) / 1e9)
}

// CheckFiles reads the files a configuration names (mitm.upstream_ca,
// auth.htpasswd, egress.deny_hosts_files, and with pacing.store redis
// pacing.redis.password_file and pacing.redis.tls.ca_file) as New would, so that a bad one
// is reported before anything is created (the CA, listeners).
func CheckFiles(cfg config.Config) error {
	if _, err := upstream.Roots(cfg.MITM.UpstreamCA); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	if err := egress.CheckDenyLists(cfg.Egress.DenyHostsFiles); err != nil {
		return fmt.Errorf("proxy: egress.deny_hosts_files: %w", err)
	}
	if _, err := policy.NewClients(cfg.Clients, cfg.Auth); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	if cfg.Pacing.Store == config.StoreRedis {
		if _, err := fleetredis.ReadLogin(cfg.Pacing.Redis); err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
	}
	if _, err := witness.Roots(cfg.Log.Witness.CA); err != nil {
		return fmt.Errorf("proxy: log.witness.ca: %w", err)
	}
	return nil
}
