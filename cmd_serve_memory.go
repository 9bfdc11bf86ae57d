package main

import (
	"log/slog"
	"os"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/doccache"
	"github.com/robotsgate/robotsgate/memlimit"
)

// applyMemoryLimit puts the soft memory limit in force (GOMEMLIMIT's, the
// configuration's memory_limit, or one from the caches' bounds) and says
// which in the start-up log, with the collector's percentage (raised
// under a limit: memlimit.GCPercent); a limit below what the caches may keep is a
// warning, since the collector would then run all the time once they fill.
func applyMemoryLimit(cfg config.Config, logger *slog.Logger) {
	caches := memlimit.Caches{Robots: int64(cfg.Robots.CacheBytes), TDMRep: int64(cfg.Usage.CacheBytes), RSL: doccache.RSLDefaultBytes}
	d := memlimit.Decide(os.Getenv("GOMEMLIMIT"), int64(cfg.MemoryLimit), caches)
	memlimit.Apply(d)
	gcPercent, _ := memlimit.ApplyGC(d, os.Getenv("GOGC"))
	attrs := []any{"limit", memlimit.Bytes(d.Limit), "source", d.Source,
		"caches", memlimit.Bytes(caches.Total()), "robots.cache_bytes", cfg.Robots.CacheBytes.String(),
		"usage.cache_bytes", cfg.Usage.CacheBytes.String(), "rsl_cache_bytes", memlimit.Bytes(caches.RSL), "gc_percent", gcPercent}
	switch {
	case d.Source == memlimit.SourceOff:
		logger.Info("no soft memory limit (memory_limit: off): the heap may grow to twice what is live", attrs[2:]...)
	case d.Limit < caches.Total():
		logger.Warn("soft memory limit below the caches' bounds: once they fill, the garbage collector runs all the time", attrs...)
	default:
		logger.Info("soft memory limit", attrs...)
	}
}
