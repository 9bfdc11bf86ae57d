package limits

import (
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/robotsgate/robotsgate/origin"
)

// OriginWindowLength is the window of usage.license_fetches_per_origin.
const OriginWindowLength = time.Minute

// maxOrigins bounds the origins whose fetches are counted (least
// recently fetched from forgotten first); each holds at most
// usage.license_fetches_per_origin times (at most 100).
const maxOrigins = 4096

// OriginWindow counts the fetches made from each origin within the last
// OriginWindowLength (robotsgate's own licence fetches). Its zero value is
// ready to use.
type OriginWindow struct {
	once     sync.Once
	mu       sync.Mutex
	byOrigin *lru.Cache[origin.Origin, []time.Time] // the fetches within the window, oldest first
}

// Take reserves a fetch from o if fewer than limit were made within the
// window; give returns the reservation of a fetch that was not made.
func (l *OriginWindow) Take(o origin.Origin, limit int, now time.Time) (give func(), ok bool) {
	l.once.Do(func() { l.byOrigin, _ = lru.New[origin.Origin, []time.Time](maxOrigins) })
	l.mu.Lock()
	defer l.mu.Unlock()
	times, _ := l.byOrigin.Get(o)
	for len(times) > 0 && now.Sub(times[0]) >= OriginWindowLength {
		times = times[1:]
	}
	if len(times) >= limit {
		l.byOrigin.Add(o, times)
		return nil, false
	}
	l.byOrigin.Add(o, append(times, now))
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		times, _ := l.byOrigin.Peek(o)
		for i, t := range times {
			if t.Equal(now) {
				l.byOrigin.Add(o, append(times[:i:i], times[i+1:]...))
				return
			}
		}
	}, true
}
