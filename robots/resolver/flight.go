package resolver

import (
	"context"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/singleflight"
)

// Flight runs the fetches of a per-origin cache: one call at a time per
// key, shared by every caller that waits for it (Wait), and refreshes in
// the background (Refresh) that Close waits for. The Resolver's fetches
// of robots.txt go through one, and caches of other files of an origin
// (FetchFile) use their own. The zero Flight is ready to use.
type Flight[V any] struct {
	group singleflight.Group
	wg    sync.WaitGroup
}

// Wait returns the value of fn for key, calling fn once for all the
// callers that ask for key while it runs. Only ctx's cancellation ends a
// caller's wait early, and it is then the only error: fn goes on for the
// others, so fn must not depend on any one caller's context.
func (f *Flight[V]) Wait(ctx context.Context, key string, fn func() V) (V, error) {
	ch := f.group.DoChan(key, func() (any, error) { return fn(), nil })
	select {
	case v := <-ch:
		return v.Val.(V), nil
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

// Refresh calls fn for key in the background, unless started was set
// already (the flag lives in the entry being refreshed, so that its
// replacement starts without one). It never joins a call under way: that
// call may be the one storing the very entry now stale, and joining it
// would refresh nothing while the entry's flag says a refresh is on its
// way, so the stale entry would be served until it is no longer usable.
// Callers of Wait that come after join the refresh.
func (f *Flight[V]) Refresh(started *atomic.Bool, key string, fn func() V) {
	if !started.CompareAndSwap(false, true) {
		return
	}
	f.wg.Add(1)
	f.group.Forget(key)
	go func() {
		defer f.wg.Done()
		f.group.Do(key, func() (any, error) { return fn(), nil })
	}()
}

// Close waits for the background refreshes under way; cancel what they
// depend on first.
func (f *Flight[V]) Close() { f.wg.Wait() }
