package resolver

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots"
)

// cacheResult puts a fresh result for o straight into the cache, as a
// completed fetch would.
func cacheResult(r *Resolver, o origin.Origin, f *robots.File) {
	now := r.cfg.Now()
	res := newResult(o, OK, 200)
	res.File, res.fetchedAt, res.expires = f, now.UnixNano(), now.Add(time.Hour).UnixNano()
	r.add(res)
}

// BenchmarkResolveHit is the per-request cost of the proxy's robots.txt
// lookup for a cached origin.
func BenchmarkResolveHit(b *testing.B) {
	r, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	o := origin.Origin{Scheme: "https", Host: "www.example.com", Port: 443}
	cacheResult(r, o, robots.Parse([]byte("User-agent: *\nDisallow: /x\n")))
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := r.Resolve(ctx, o); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// medianCorpusFile returns the corpus file of median size, or a synthetic
// file of the corpus' median size (535 B) when the corpus is absent.
func medianCorpusFile(b *testing.B) (body []byte, name string) {
	dir := os.Getenv("ROBOTSGATE_TESTDATA")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "testdata")
	}
	entries, err := os.ReadDir(filepath.Join(dir, "robots-corpus"))
	if err != nil {
		var sb strings.Builder
		sb.WriteString("User-agent: *\n")
		for i := 0; sb.Len() < 535; i++ {
			fmt.Fprintf(&sb, "Disallow: /section-%d/\n", i)
		}
		return []byte(sb.String()), "synthetic 535 B"
	}
	type sized struct {
		name string
		size int64
	}
	var files []sized
	for _, e := range entries {
		if info, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".txt") {
			files = append(files, sized{e.Name(), info.Size()})
		}
	}
	slices.SortFunc(files, func(x, y sized) int { return cmp.Compare(x.size, y.size) })
	m := files[len(files)/2]
	body, err = os.ReadFile(filepath.Join(dir, "robots-corpus", m.name))
	if err != nil {
		b.Fatal(err)
	}
	return body, m.name
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkCacheMemory reports the heap held by 100,000 cached origins, each
// with its own parse of the corpus' median file.
func BenchmarkCacheMemory(b *testing.B) {
	body, name := medianCorpusFile(b)
	const n = 100000
	for range b.N {
		before := heapInUse()
		r, err := New(Config{CacheEntries: n})
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			o := origin.Origin{Scheme: "https", Host: fmt.Sprintf("www%d.example.com", i), Port: 443}
			cacheResult(r, o, robots.Parse(body))
		}
		after := heapInUse()
		b.ReportMetric(float64(after-before)/1e6, "MB/100k-origins")
		b.ReportMetric(float64(after-before)/(1<<20), "MiB/100k-origins")
		b.ReportMetric(float64(after-before)/n, "B/origin")
		b.ReportMetric(float64(len(body)), "file-B")
		runtime.KeepAlive(r)
		r.Close()
	}
	b.Logf("median file: %s (%d B)", name, len(body))
}
