package resolver

import (
	"sync/atomic"
	"time"
)

// clockTick is the precision of the coarse clock the cache-hit path reads.
const clockTick = 10 * time.Millisecond

// coarseClock is a time that a goroutine refreshes every clockTick. Reading
// it is an atomic load, where time.Now costs tens of nanoseconds on some
// virtual machines; freshness periods of a minute or more do not need more
// precision.
type coarseClock struct {
	now  atomic.Int64
	stop chan struct{}
	done chan struct{}
}

func startCoarseClock() *coarseClock {
	c := &coarseClock{stop: make(chan struct{}), done: make(chan struct{})}
	c.now.Store(time.Now().UnixNano())
	go func() {
		defer close(c.done)
		t := time.NewTicker(clockTick)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case now := <-t.C:
				c.now.Store(now.UnixNano())
			}
		}
	}()
	return c
}

func (c *coarseClock) Now() time.Time { return time.Unix(0, c.now.Load()) }

func (c *coarseClock) Stop() {
	close(c.stop)
	<-c.done
}
