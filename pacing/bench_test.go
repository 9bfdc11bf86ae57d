package pacing

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// benchKeys returns n distinct pacing keys shaped like the proxy's.
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "https://host" + strconv.Itoa(i) + ".example:443|googlebot"
	}
	return keys
}

// BenchmarkMemoryReserve is the steady state: known keys, real clock.
func BenchmarkMemoryReserve(b *testing.B) {
	m := NewMemory(MemoryOptions{})
	keys := benchKeys(1024)
	ctx := context.Background()
	for _, k := range keys {
		_, _ = m.Reserve(ctx, k, time.Microsecond, time.Hour)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r, _ := m.Reserve(ctx, keys[i&1023], time.Microsecond, time.Hour)
		if !r.Granted {
			b.Fatal("refused")
		}
		i++
	}
}

// BenchmarkMemoryReserveParallel is the steady state from all CPUs.
func BenchmarkMemoryReserveParallel(b *testing.B) {
	m := NewMemory(MemoryOptions{})
	keys := benchKeys(1024)
	ctx := context.Background()
	for _, k := range keys {
		_, _ = m.Reserve(ctx, k, time.Microsecond, time.Hour)
	}
	var seq atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seq.Add(1) * 7919)
		for pb.Next() {
			_, _ = m.Reserve(ctx, keys[i&1023], time.Microsecond, time.Hour)
			i++
		}
	})
}

// heapMB is the live heap after a full GC, in MB.
func heapMB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}

// BenchmarkMemoryMillionKeys touches 1,000,000 keys once each and reports
// the heap: MB-live right after (every key still paced, interval 1s),
// MB-idle once they are idle and swept, and MB-rolling for 1,000,000 keys
// touched over 10 s of (fake) time, where at any moment only the last
// second's keys are paced.
func BenchmarkMemoryMillionKeys(b *testing.B) {
	const n = 1_000_000
	var live, idle, rolling float64
	for b.Loop() {
		base := heapMB()
		clock := newFakeClock()
		m := NewMemory(MemoryOptions{Clock: clock.Now})
		touch(m, n, time.Second, func() {})
		live = heapMB() - base
		clock.Advance(2 * time.Second)
		m.Sweep()
		idle = heapMB() - base
		runtime.KeepAlive(m)

		clock = newFakeClock()
		m = NewMemory(MemoryOptions{Clock: clock.Now})
		touch(m, n, time.Second, func() { clock.Advance(10 * time.Microsecond) })
		rolling = heapMB() - base
		runtime.KeepAlive(m)
	}
	b.ReportMetric(live, "MB-live")
	b.ReportMetric(idle, "MB-idle")
	b.ReportMetric(rolling, "MB-rolling")
	b.ReportMetric(live*(1<<20)/n, "B/key")
}

// touch reserves n distinct keys once each, calling tick before each.
func touch(m *Memory, n int, interval time.Duration, tick func()) {
	ctx := context.Background()
	buf := make([]byte, 0, 64)
	for i := range n {
		tick()
		buf = append(strconv.AppendInt(append(buf[:0], "https://host"...), int64(i), 10), ".example:443|googlebot"...)
		_, _ = m.Reserve(ctx, string(buf), interval, 0)
	}
}

// countHook counts the commands (and pipelines) a go-redis client sends:
// each is one round trip.
type countHook struct{ n atomic.Int64 }

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// BenchmarkRedisReserve reports round trips per reservation counted two
// ways: commands the client sent (roundtrips/op, a go-redis hook) and
// scripts the server ran (scripts/op, EVALSHA + EVAL calls from INFO
// commandstats; the GET, SET and TIME inside a script are not round trips).
func BenchmarkRedisReserve(b *testing.B) {
	srv := startRedis(b)
	r := newRedisStore(b, srv)
	raw := rawClient(b, srv)
	hook := &countHook{}
	r.client.AddHook(hook)
	ctx := context.Background()
	if _, err := r.Reserve(ctx, "warm", time.Microsecond, time.Hour); err != nil {
		b.Fatal(err)
	}
	keys := benchKeys(1024)
	before := scriptCalls(b, raw)
	hook.n.Store(0)
	i := 0
	for b.Loop() {
		if _, err := r.Reserve(ctx, keys[i&1023], time.Microsecond, time.Hour); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.StopTimer()
	b.ReportMetric(float64(hook.n.Load())/float64(i), "roundtrips/op")
	b.ReportMetric(float64(scriptCalls(b, raw)-before)/float64(i), "scripts/op")
}

// scriptCalls returns how many EVALSHA and EVAL commands Redis has run.
func scriptCalls(b *testing.B, c *redis.Client) int64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for line := range strings.Lines(info) {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if name != "cmdstat_evalsha" && name != "cmdstat_eval" || !ok {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			b.Fatalf("commandstats %q: %v", line, err)
		}
		total += n
	}
	return total
}
