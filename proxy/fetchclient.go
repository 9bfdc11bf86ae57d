package proxy

import (
	"crypto/tls"
	"fmt"
	"net/http"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/upstream"
)

// FetchClient returns an HTTP client that reaches URLs under cfg's egress
// rules as the proxy does (the egress guard with its network classes and
// allow_networks exceptions, allow_hosts, deny_hosts, deny_hosts_files,
// allow_ports, checked on every connection, redirects included), trusting
// the system roots plus mitm.upstream_ca, never a proxy from the
// environment. For commands that fetch a robots.txt outside the proxy
// (`robotsgate lint URL -config`); it connects directly, not through
// upstream.proxy.
func FetchClient(cfg config.Config) (*http.Client, error) {
	lists, err := egress.LoadDenyLists(cfg.Egress.DenyHostsFiles)
	if err != nil {
		return nil, fmt.Errorf("proxy: egress.deny_hosts_files: %w", err)
	}
	guard, err := newGuard(cfg.Egress, lists, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	roots, err := upstream.Roots(cfg.MITM.UpstreamCA)
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	return &http.Client{
		Timeout: cfg.Robots.FetchTimeout.Duration(),
		Transport: &http.Transport{
			Proxy:           nil,
			DialContext:     guard.DialContext,
			TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		},
	}, nil
}
