// Package testclock is a settable clock for tests: it moves only when told
// to, so expiry, renewal and backoff can be tested without waiting.
package testclock

import (
	"sync"
	"time"
)

// Clock is a time that changes only through Advance. It is safe for
// concurrent use; pass its Now method where code takes a clock.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a Clock showing start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
