// Package testorigin starts loopback origins for the tests of the caches
// built on the robots.txt resolver, and resolvers whose egress guard lets
// those origins through: tests reach real servers, and only these.
package testorigin

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// Addr is the loopback address the origins listen on and the only one
// Resolver's egress guard admits.
const Addr = "127.0.0.2"

// Start starts an HTTP server on Addr (a free port) serving h; it is
// closed when the test ends.
func Start(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", Addr+":0")
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	s.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// Resolver returns a resolver for rc, with a fetch timeout of 2 s and an
// egress guard that blocks private addresses but Addr; it is closed when
// the test ends.
func Resolver(t testing.TB, rc resolver.Config) *resolver.Resolver {
	t.Helper()
	guard := &egress.Guard{BlockPrivate: true, AllowNetworks: []netip.Prefix{netip.PrefixFrom(netip.MustParseAddr(Addr), 32)}}
	rc.DialContext, rc.FetchTimeout = guard.DialContext, 2*time.Second
	r, err := resolver.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}
