package resolver

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/origin"
)

// Origins that each serve a 500 KiB robots.txt cannot grow the cache past
// its byte bound: forty of them ask for some 26 MiB of parsed rules, the
// cache keeps at most its 8 MiB, and the heap says the same.
func TestCacheStaysWithinItsByteBound(t *testing.T) {
	var big strings.Builder
	big.WriteString("User-agent: *\n")
	for i := 0; big.Len() < 500<<10; i++ {
		fmt.Fprintf(&big, "Disallow: /p%d/*.php$\n", i)
	}
	body := big.String()
	o := startOrigin(t, "127.0.0.2", false, serveRobots(body))
	_, port, _ := net.SplitHostPort(o.Listener.Addr().String())
	const bound = 8 << 20
	// One server, forty origins: the names differ, the guard connects them
	// all to it.
	guard := &egress.Guard{BlockPrivate: true, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
		Resolver: loopbackNames{}}
	r := newResolver(t, Config{CacheBytes: bound, DialContext: guard.DialContext})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range 40 {
		ori, err := origin.Parse(fmt.Sprintf("http://o%d.test:%s", i, port))
		if err != nil {
			t.Fatal(err)
		}
		if res := resolve(t, r, ori); res.File == nil || res.File.Size() < 400<<10 {
			t.Fatalf("%s: %+v, want the big file", ori, res)
		}
		if s := r.Stats(); s.Bytes > bound {
			t.Fatalf("after %d origins the cache keeps %d bytes, bound %d", i+1, s.Bytes, bound)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 2*bound {
		t.Errorf("the heap grew by %d MiB for a cache bound to %d MiB", grew>>20, bound>>20)
	}
	if s := r.Stats(); s.Entries >= 40 || s.Entries < 2 {
		t.Errorf("%d entries cached, %d bytes; want the few that fit in %d", s.Entries, s.Bytes, bound)
	}
	runtime.KeepAlive(r)
}

// loopbackNames resolves every name to 127.0.0.2.
type loopbackNames struct{}

func (loopbackNames) LookupNetIP(_ context.Context, _, _ string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
}
