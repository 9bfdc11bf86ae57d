package pacing

import (
	"context"
	"hash/maphash"
	"strings"
	"sync"
	"time"
)

// Defaults of MemoryOptions.
const (
	DefaultMemoryShards     = 64
	DefaultMemorySweepEvery = time.Second
)

// MemoryOptions configures NewMemory. The zero value is ready to use.
type MemoryOptions struct {
	// Clock returns the current time; nil means time.Now. Tests inject a
	// fake clock to check the arithmetic exactly.
	Clock func() time.Time
	// Shards is the number of independently locked parts of the schedule,
	// rounded up to a power of two. Default DefaultMemoryShards.
	Shards int
	// SweepEvery is how often a shard, when touched, drops its idle keys
	// (next in the past). Default DefaultMemorySweepEvery.
	SweepEvery time.Duration
}

// Memory is the in-process Store. A reservation on a known key costs one
// lock of its shard and no allocation. Idle keys are dropped by a sweep
// that each shard runs on itself at most every SweepEvery when touched (or
// on Sweep), and a shard whose map has shrunk to a quarter of its peak is
// rebuilt so the memory is returned: the footprint follows the number of
// keys paced in the last interval plus SweepEvery, never the number of
// keys ever seen. Memory never fails.
type Memory struct {
	clock      func() time.Time
	epoch      time.Time
	seed       maphash.Seed
	mask       uint64
	sweepEvery int64
	shards     []memShard
}

// memShard is one locked part of the schedule: next time per key, in
// nanoseconds since the store's epoch.
type memShard struct {
	mu      sync.Mutex
	next    map[string]int64
	peak    int   // largest len(next) since the map was last rebuilt
	sweepAt int64 // when the next sweep is due
	_       [64]byte
}

// minRebuild is the peak size below which a shard's map is never rebuilt
// (small maps are not worth copying).
const minRebuild = 256

// NewMemory returns an empty in-process store.
func NewMemory(opts MemoryOptions) *Memory {
	m := &Memory{clock: opts.Clock, seed: maphash.MakeSeed()}
	if m.clock == nil {
		m.clock = time.Now
	}
	m.epoch = m.clock()
	n := 1
	for n < opts.Shards || (opts.Shards <= 0 && n < DefaultMemoryShards) {
		n <<= 1
	}
	m.mask = uint64(n - 1)
	m.sweepEvery = int64(opts.SweepEvery)
	if m.sweepEvery <= 0 {
		m.sweepEvery = int64(DefaultMemorySweepEvery)
	}
	m.shards = make([]memShard, n)
	for i := range m.shards {
		m.shards[i].next = make(map[string]int64)
	}
	return m
}

// now is the store's clock in nanoseconds since its epoch (monotonic when
// the clock is time.Now).
func (m *Memory) now() int64 { return int64(m.clock().Sub(m.epoch)) }

// shard returns the shard that holds key.
func (m *Memory) shard(key string) *memShard {
	return &m.shards[maphash.String(m.seed, key)&m.mask]
}

// Reserve implements Store. It never fails and ignores ctx (it does not
// wait).
func (m *Memory) Reserve(_ context.Context, key string, interval, maxWait time.Duration) (Reservation, error) {
	now := m.now()
	s := m.shard(key)
	s.mu.Lock()
	s.maybeSweep(now, m.sweepEvery)
	next, known := s.next[key]
	r := decide(now, next, int64(clampInterval(interval)), int64(clampWait(maxWait)))
	if r.Granted {
		s.set(key, r.token, known)
	}
	s.mu.Unlock()
	return r, nil
}

// Cancel implements Store: next goes back to r's slot if it is still what r
// set.
func (m *Memory) Cancel(_ context.Context, key string, r Reservation) error {
	if !r.Granted || r.token == r.slot {
		return nil
	}
	now := m.now()
	s := m.shard(key)
	s.mu.Lock()
	if next, ok := s.next[key]; ok && next == r.token {
		if r.slot > now {
			s.next[key] = r.slot
		} else {
			delete(s.next, key)
		}
	}
	s.mu.Unlock()
	return nil
}

// Pending implements Store.
func (m *Memory) Pending(_ context.Context, key string) (time.Duration, error) {
	now := m.now()
	s := m.shard(key)
	s.mu.Lock()
	next := s.next[key]
	s.mu.Unlock()
	return time.Duration(max(next-now, 0)), nil
}

// raise makes key's next at least d from now, without reserving a slot:
// Fallback records there the reservations Redis granted, so that local
// pacing, should Redis fail, starts from them.
func (m *Memory) raise(key string, d time.Duration) {
	now := m.now()
	s := m.shard(key)
	s.mu.Lock()
	s.maybeSweep(now, m.sweepEvery)
	next, known := s.next[key]
	if want := now + int64(clampInterval(d)); want > next {
		s.set(key, want, known)
	}
	s.mu.Unlock()
}

// Sweep drops every idle key now (normally shards sweep themselves as they
// are touched) and returns the memory of shrunken shards. A long-running
// process that may go quiet can call it from a ticker.
func (m *Memory) Sweep() {
	now := m.now()
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		s.sweep(now, m.sweepEvery)
		s.mu.Unlock()
	}
}

// Len returns the number of keys held (idle ones not swept yet included).
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.next)
		s.mu.Unlock()
	}
	return n
}

// set stores next for key; a new key is cloned so the map never pins the
// caller's (possibly larger) backing array. Called with s.mu held.
func (s *memShard) set(key string, next int64, known bool) {
	if !known {
		key = strings.Clone(key)
	}
	s.next[key] = next
	s.peak = max(s.peak, len(s.next))
}

// maybeSweep sweeps the shard if a sweep is due. Called with s.mu held.
func (s *memShard) maybeSweep(now, every int64) {
	if now >= s.sweepAt {
		s.sweep(now, every)
	}
}

// sweep drops the keys whose next is not in the future (they hold no
// information) and rebuilds the map when it has shrunk to a quarter of its
// peak, since Go maps never give back their buckets. Called with s.mu held.
func (s *memShard) sweep(now, every int64) {
	s.sweepAt = now + every
	for k, next := range s.next {
		if next <= now {
			delete(s.next, k)
		}
	}
	if s.peak >= minRebuild && len(s.next) <= s.peak/4 {
		fresh := make(map[string]int64, len(s.next))
		for k, next := range s.next {
			fresh[k] = next
		}
		s.next = fresh
		s.peak = len(fresh)
	}
}
