package resolver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/origin"
)

// twoAddresses resolves every name to 127.0.0.3 first and 127.0.0.2
// second, as a DNS answer with two addresses does.
type twoAddresses struct{}

func (twoAddresses) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("127.0.0.2")}, nil
}

// ResolveAt fetches robots.txt from the address given, not from the
// first address of the name (which Resolve reaches), caches each address
// apart and apart from Resolve's file, follows a redirect to the same
// origin to the same address, and keeps its files out of the shared
// store.
func TestResolveAtFetchesFromTheAddressGiven(t *testing.T) {
	first, ln := samePort(t)
	port := first.Listener.Addr().(*net.TCPAddr).Port
	var secondHits atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		secondHits.Add(1)
		http.Redirect(w, r, "/moved-robots.txt", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/moved-robots.txt", func(w http.ResponseWriter, r *http.Request) {
		secondHits.Add(1)
		fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
	})
	second := &http.Server{Handler: mux}
	go second.Serve(ln)
	t.Cleanup(func() { second.Close() })

	guard := &egress.Guard{BlockPrivate: true, Resolver: twoAddresses{}, AllowNetworks: []netip.Prefix{
		netip.MustParsePrefix("127.0.0.2/32"), netip.MustParsePrefix("127.0.0.3/32")}}
	store := &mapStore{recs: map[origin.Origin]Record{}}
	r := newResolver(t, Config{DialContext: guard.DialContext, Store: store})
	o := origin.Origin{Scheme: "http", Host: "both.test", Port: uint16(port)}
	at := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), uint16(port))

	for range 2 {
		res, err := r.ResolveAt(context.Background(), o, at)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != OK || res.Allowed("Bot", "/private/x") || res.URL() != o.URL("/moved-robots.txt") {
			t.Fatalf("ResolveAt %s: %v, /private allowed %v, read at %s: want the second address's file, after its redirect",
				at, res.Status, res.Allowed("Bot", "/private/x"), res.URL())
		}
	}
	if secondHits.Load() != 2 || first.hits.Load() != 0 {
		t.Errorf("requests: second address %d (want 2: robots.txt and its redirect, once), first %d (want 0)",
			secondHits.Load(), first.hits.Load())
	}
	if len(store.recs) != 0 {
		t.Errorf("a file fetched from one address was shared through the store: %v", store.recs)
	}
	if res := resolve(t, r, o); !res.Allowed("Bot", "/private/x") || first.hits.Load() != 1 {
		t.Errorf("Resolve of the name: /private allowed %v, first address hit %d times: want its own file", res.Allowed("Bot", "/private/x"), first.hits.Load())
	}
	if res, _ := r.ResolveAt(context.Background(), o, at); res.Allowed("Bot", "/private/x") {
		t.Error("after Resolve, ResolveAt answers with the name's file")
	}
}

// samePort starts an origin on 127.0.0.3 and returns it with a listener
// on the same port of 127.0.0.2 (a name's two servers share the port its
// origin names), trying other ports while that one is taken.
func samePort(t *testing.T) (*testOrigin, net.Listener) {
	t.Helper()
	for range 20 {
		first := startOrigin(t, "127.0.0.3", false, serveRobots("User-agent: *\nAllow: /\n"))
		port := first.Listener.Addr().(*net.TCPAddr).Port
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.2:%d", port)); err == nil {
			return first, ln
		}
		first.Close()
	}
	t.Fatal("no port free on both 127.0.0.3 and 127.0.0.2 in 20 tries")
	return nil, nil
}
