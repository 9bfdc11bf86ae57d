package fleet

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/internal/redistest"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// Three resolvers on one Redis, each asked at once for an origin none has
// fetched, whose robots.txt takes 300 ms: the fetch lock makes one fetch
// it while the others wait for its record, and all three get it.
func TestColdRobotsTxtIsFetchedOncePerFleet(t *testing.T) {
	srv := redistest.Start(t)
	var fetches atomic.Int64
	o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		time.Sleep(300 * time.Millisecond) // a slow origin: every resolver asks while it is fetched
		io.WriteString(w, "User-agent: *\nDisallow: /private\n")
	}))
	t.Cleanup(o.Close)
	u, _ := url.Parse(o.URL)
	org, err := origin.FromURL(u)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 3 {
		store, err := NewRobotsStore(RobotsOptions{Addr: srv.Addr})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		r, err := resolver.New(resolver.Config{Store: store, DialContext: (&egress.Guard{}).DialContext})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		wg.Go(func() {
			res, err := r.Resolve(context.Background(), org)
			if err != nil || res.File == nil || res.File.Group("x").Decide("/private").Allowed {
				t.Errorf("resolver %d: %v %v", i, res, err)
			}
		})
	}
	wg.Wait()
	if n := fetches.Load(); n != 1 {
		t.Errorf("robots.txt fetched %d times by three resolvers sharing Redis, want once", n)
	}
}
