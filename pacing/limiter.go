package pacing

import (
	"context"
	"strings"
	"sync"
	"time"
)

// limiter bounds the requests in flight per key (a counting semaphore per
// key). Waiters are served first come, first served; a key's state exists
// only while it has holders or waiters. It lives in this process only.
type limiter struct {
	max  int
	mu   sync.Mutex
	keys map[string]*limitKey
}

// limitKey is one key's semaphore: permits held and the queue of waiters.
type limitKey struct {
	held    int
	waiters []chan struct{}
}

// newLimiter returns a limiter allowing max holders per key.
func newLimiter(max int) *limiter {
	return &limiter{max: max, keys: make(map[string]*limitKey)}
}

// acquire takes a permit for key, waiting at most maxWait. It returns how
// long it waited; a *RefusedError (ReasonConcurrency) if no permit came free
// in time, or ctx's error if the caller gave up.
func (l *limiter) acquire(ctx context.Context, key string, maxWait time.Duration) (time.Duration, error) {
	l.mu.Lock()
	k := l.keys[key]
	if k == nil {
		k = &limitKey{}
		l.keys[strings.Clone(key)] = k
	}
	if k.held < l.max && len(k.waiters) == 0 {
		k.held++
		l.mu.Unlock()
		return 0, nil
	}
	if maxWait <= 0 {
		l.mu.Unlock()
		return 0, concurrencyRefusal(0)
	}
	ch := make(chan struct{})
	k.waiters = append(k.waiters, ch)
	l.mu.Unlock()
	return l.wait(ctx, key, k, ch, maxWait)
}

// wait waits for ch to be closed by a release (the permit is then handed
// over), for maxWait or for ctx.
func (l *limiter) wait(ctx context.Context, key string, k *limitKey, ch chan struct{}, maxWait time.Duration) (time.Duration, error) {
	start := time.Now()
	timer := time.NewTimer(maxWait)
	defer timer.Stop()
	var err error
	select {
	case <-ch:
		return time.Since(start), nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = concurrencyRefusal(maxWait)
	}
	if l.abandon(key, k, ch) {
		return time.Since(start), err
	}
	// The permit was handed over while we gave up: pass it on.
	l.release(key)
	return time.Since(start), err
}

// abandon removes ch from k's queue; false if it was no longer queued (a
// release already handed it a permit).
func (l *limiter) abandon(key string, k *limitKey, ch chan struct{}) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, w := range k.waiters {
		if w == ch {
			k.waiters = append(k.waiters[:i], k.waiters[i+1:]...)
			l.forget(key, k)
			return true
		}
	}
	return false
}

// release returns a permit for key: handed to the first waiter if any.
func (l *limiter) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.keys[key]
	if k == nil {
		return
	}
	if len(k.waiters) > 0 {
		ch := k.waiters[0]
		k.waiters[0] = nil
		k.waiters = k.waiters[1:]
		close(ch)
		return
	}
	k.held--
	l.forget(key, k)
}

// forget drops an unused key. Called with l.mu held.
func (l *limiter) forget(key string, k *limitKey) {
	if k.held <= 0 && len(k.waiters) == 0 {
		delete(l.keys, key)
	}
}

// size returns the number of keys with holders or waiters.
func (l *limiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// concurrencyRefusal is the error for a request that found no permit:
// nothing tells when one will come free, so retry after a second.
func concurrencyRefusal(waited time.Duration) *RefusedError {
	return &RefusedError{Reason: ReasonConcurrency, Wait: waited, RetryAfter: time.Second}
}
