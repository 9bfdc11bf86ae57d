package policy

import (
	"path"
	"time"

	"github.com/robotsgate/robotsgate/config"
)

// site is the override that applies to a host.
type site struct {
	ignore    bool          // no robots checks
	delay     time.Duration // operator floor interval, 0 = pacing.default_delay
	noBackoff bool          // never paused (sites[].backoff: ignore)
}

type siteRule struct {
	globs []string
	site  site
}

// sites holds the per-host overrides; the first entry with a matching glob
// applies.
type sites []siteRule

func newSites(entries []config.Site) sites {
	out := make(sites, 0, len(entries))
	for _, e := range entries {
		out = append(out, siteRule{globs: e.Hosts, site: site{
			ignore:    e.Robots == config.RobotsIgnore,
			delay:     e.Delay.Duration(),
			noBackoff: e.Backoff == config.BackoffIgnore,
		}})
	}
	return out
}

// match returns the override for a canonical (lower-case) host.
func (s sites) match(host string) (site, bool) {
	for _, r := range s {
		for _, g := range r.globs {
			if ok, _ := path.Match(g, host); ok {
				return r.site, true
			}
		}
	}
	return site{}, false
}
