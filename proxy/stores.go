package proxy

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/doccache"
	"github.com/robotsgate/robotsgate/fleetredis"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/robots"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// The stores the server builds once, at start: the robots.txt resolver
// and the document caches on it, the pacing schedule and its governor,
// and the gauges that read them.

// newResolver creates the robots.txt resolver, fetching through the egress
// guard, and the tdmrep.json cache on it; with a Redis pacing store, both
// share fetched files through the same Redis.
func (s *Server) newResolver(cfg config.Config, roots *x509.CertPool) error {
	var shared, sharedTDM, sharedRSL resolver.Store
	if cfg.Pacing.Store == config.StoreRedis {
		fr, err := s.fleetRedis(cfg.Pacing.Redis)
		if err != nil {
			return err
		}
		rs, ts, ls, err := fr.Documents()
		if err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
		shared, sharedTDM, sharedRSL = rs, ts, ls
		s.closeShared = func() error { return errors.Join(rs.Close(), ts.Close(), ls.Close()) }
	}
	r, err := resolver.New(resolver.Config{
		Store:        shared,
		UserAgent:    cfg.Robots.FetchUserAgent,
		FetchTimeout: cfg.Robots.FetchTimeout.Duration(),
		CacheEntries: cfg.Robots.CacheEntries,
		CacheBytes:   int64(cfg.Robots.CacheBytes),
		MinTTL:       cfg.Robots.MinTTL.Duration(),
		MaxTTL:       cfg.Robots.MaxTTL.Duration(),
		RetryMin:     cfg.Robots.RetryMin.Duration(),
		RetryMax:     cfg.Robots.RetryMax.Duration(),
		DialContext:  s.upstream.Dial,
		Proxy:        s.upstream.ProxyFor,
		RootCAs:      roots,
		OnFetch:      s.robotsFetched,
		OnAnswer:     s.evidence.OnRobots(),
		// robots.txt and tdmrep.json fetches, each redirect hop, are
		// signed with the gateway's key when bot_auth is set.
		WrapTransport: s.signFetches,
	})
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	s.resolver = r
	// tdmrep.json files: fetched by the resolver's client, with robots.txt's
	// cache bounds and freshness, archived alike.
	s.tdmrep, err = doccache.NewTDMRep(doccache.TDMRepConfig{
		Resolver:     r,
		Store:        sharedTDM,
		CacheEntries: cfg.Robots.CacheEntries,
		CacheBytes:   int64(cfg.Usage.CacheBytes),
		OnAnswer:     s.evidence.OnTDMRep(),
	})
	if err != nil {
		r.Close()
		return fmt.Errorf("proxy: %w", err)
	}
	// RSL licences: by URL, with the same client, freshness and archive.
	s.rsl, err = doccache.NewRSL(doccache.RSLConfig{
		Resolver:     r,
		Store:        sharedRSL,
		CacheEntries: cfg.Robots.CacheEntries,
		OnAnswer:     s.evidence.OnRSL(),
		// Licence documents are robotsgate's own requests to their
		// origins (licencefetch.go).
		Admit: s.admitLicenceFetch,
		Miss:  s.licenceMiss,
	})
	if err != nil {
		s.tdmrep.Close()
		r.Close()
		return fmt.Errorf("proxy: %w", err)
	}
	return nil
}

// fleetRedis returns the connection to the fleet's Redis that every store
// shares (pacing.store: redis), opening it on first use (Shutdown closes
// it).
func (s *Server) fleetRedis(r config.Redis) (*fleetredis.Redis, error) {
	if s.redis == nil {
		fr, err := fleetredis.Open(r, s.log)
		if err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
		s.redis = fr
	}
	return s.redis, nil
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

// openPacingStore creates the schedule's store: in memory, or Redis behind
// the pacing.on_store_error policy. Changing it needs a restart.
func (s *Server) openPacingStore(p config.Pacing) error {
	if p.Store != config.StoreRedis {
		s.paceStore = pacing.NewMemory(pacing.MemoryOptions{})
		s.governor = s.newGovernor(p, nil)
		return nil
	}
	fr, err := s.fleetRedis(p.Redis)
	if err != nil {
		return err
	}
	r, err := fr.Pacing()
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	f, err := pacing.NewFallback(r, pacing.FallbackOptions{OnError: pacing.OnError(p.OnStoreError),
		OnFailure: func(error) { s.metrics.StoreErrors.Inc() }})
	if err != nil {
		r.Close()
		return fmt.Errorf("proxy: pacing: %w", err)
	}
	s.governor = s.newGovernor(p, r.GovernorShared())
	s.fleetPermits = r
	ctx, stop := context.WithCancel(context.Background())
	followed, ready := make(chan struct{}), make(chan struct{})
	go func() { // the fleet's pauses and response times
		defer close(followed)
		r.Follow(ctx, s.governor, func() { close(ready) })
	}()
	select { // the pauses in force, before the first request (or check) is judged
	case <-ready:
	case <-time.After(2 * time.Second):
	}
	s.paceStore, s.ready = f, r.Healthy
	s.closeStore = func() error {
		stop()
		<-followed
		return r.Close()
	}
	return nil
}

func (s *Server) registerGauges() {
	s.redis.RegisterMetrics(s.metrics)
	s.metrics.GaugeFunc("robotsgate_robots_cache_entries", "Origins whose robots.txt is cached.",
		func() float64 { return float64(s.resolver.Stats().Entries) })
	s.metrics.GaugeFunc("robotsgate_robots_cache_bytes", "Memory the robots.txt cache keeps (robots.cache_bytes bounds it).",
		func() float64 { return float64(s.resolver.Stats().Bytes) })
	s.metrics.GaugeFunc("robotsgate_tdmrep_cache_bytes", "Memory the tdmrep.json cache keeps (usage.cache_bytes bounds it).",
		func() float64 { return float64(s.tdmrep.Stats().Bytes) })
	s.metrics.GaugeFunc("robotsgate_rsl_cache_bytes", "Memory the RSL licence cache keeps (at most 16 MiB).",
		func() float64 { return float64(s.rsl.Stats().Bytes) })
	s.metrics.GaugeFunc("robotsgate_origins_in_backoff", "Origins paused now (they answered 429 or 503), or whose pause is over and whose first request after it is unanswered: their requests wait.",
		func() float64 { return float64(len(s.governor.PausedNow(pacing.MaxPausedOrigins))) })
	s.metrics.CounterFunc("robotsgate_robots_cache_hits_total", "robots.txt lookups answered from the cache.",
		func() float64 { return float64(s.resolver.Stats().Hits) })
	s.metrics.CounterFunc("robotsgate_robots_cache_misses_total", "robots.txt lookups that waited for a fetch.",
		func() float64 { return float64(s.resolver.Stats().Misses) })
	s.evidence.RegisterMetrics(s.metrics)
	s.metrics.CounterFunc("robotsgate_certificates_minted_total", "Leaf certificates minted for intercepted hosts.",
		func() float64 {
			if s.minter == nil {
				return 0
			}
			return float64(s.minter.Minted())
		})
}
