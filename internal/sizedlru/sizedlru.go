// Package sizedlru is a least-recently-used cache bounded both by entries
// and by the bytes its values retain, for tables that remote parties can
// grow (one parsed robots.txt may keep half a mebibyte, and wildcard DNS
// makes origins free). Each value is added with its size, measured by its
// owner; the least recently used values are evicted until both bounds
// hold. It is safe for concurrent use; lookups that do not promote take a
// read lock only.
package sizedlru

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Cache is an LRU cache of values of known sizes.
type Cache[K comparable, V any] struct {
	mu       sync.RWMutex
	lru      *simplelru.LRU[K, entry[V]]
	maxBytes int64
	bytes    int64
}

type entry[V any] struct {
	v    V
	size int64
}

// New returns a cache of at most maxEntries values retaining at most
// maxBytes bytes between them (a value larger than maxBytes alone is kept
// until the next is added).
func New[K comparable, V any](maxEntries int, maxBytes int64) (*Cache[K, V], error) {
	c := &Cache[K, V]{maxBytes: maxBytes}
	l, err := simplelru.NewLRU[K, entry[V]](maxEntries, func(_ K, e entry[V]) { c.bytes -= e.size })
	if err != nil {
		return nil, err
	}
	c.lru = l
	return c, nil
}

// Add adds or replaces the value of k, of size bytes, as the most recently
// used, and evicts the least recently used values until the bounds hold.
func (c *Cache[K, V]) Add(k K, v V, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.lru.Peek(k); ok {
		c.bytes -= old.size // Add replaces it without the eviction callback
	}
	c.lru.Add(k, entry[V]{v, size})
	c.bytes += size
	for c.bytes > c.maxBytes && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
}

// Get returns k's value and marks it the most recently used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(k)
	return e.v, ok
}

// Peek returns k's value without marking it used.
func (c *Cache[K, V]) Peek(k K) (V, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.lru.Peek(k)
	return e.v, ok
}

// Remove drops k's value.
func (c *Cache[K, V]) Remove(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(k)
}

// Len returns the number of values held.
func (c *Cache[K, V]) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.lru.Len()
}

// Bytes returns the sum of the sizes of the values held.
func (c *Cache[K, V]) Bytes() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.bytes
}
