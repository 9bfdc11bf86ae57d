package robots_test

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/robots"
)

// Helpers for the benchmarks in bench_test.go. The corpus itself is loaded
// by robots.LoadCorpus (corpus_ref_test.go), shared with the internal test
// that compares the package with the Google reference.

// shuffledQueries returns the corpus queries in a fixed pseudo-random order.
// The match benchmarks cycle through them; a run that stops part-way through
// a cycle (a slow baseline runs fewer iterations than there are queries) has
// then measured an unbiased sample rather than the first few sources of the
// corpus. inOrder lists the indices of qs in the corpus' own order, where a
// file's queries follow one another.
func shuffledQueries(c *robots.Corpus) (qs []robots.CorpusQuery, inOrder []int) {
	perm := make([]int, len(c.Queries))
	for i := range perm {
		perm[i] = i
	}
	r := rand.New(rand.NewPCG(2, 9309))
	r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	qs = make([]robots.CorpusQuery, len(perm))
	inOrder = make([]int, len(perm))
	for i, k := range perm {
		qs[i] = c.Queries[k]
		inOrder[k] = i
	}
	return qs, inOrder
}

// cursors remembers, per benchmark, where the previous run stopped in its
// cycle over the queries, so that with -count N a slow baseline measures N
// different slices of the corpus instead of the same first one N times.
var cursors sync.Map // benchmark name -> *int

func cursor(b *testing.B) *int {
	p, _ := cursors.LoadOrStore(b.Name(), new(int))
	return p.(*int)
}

// latencyOrder says in which order reportLatency visits the queries and
// whether each is warmed first.
type latencyOrder struct {
	label string // metric infix: "" | "-warm" | "-fileorder"
	warm  bool
	idx   []int // query indices in visiting order; nil: 0..n-1
}

// reps is how many times reportLatency runs each query in a row: once for
// a cold figure, eight (amortising the clock) for a warm one.
func (o latencyOrder) reps() int {
	if o.warm {
		return 8
	}
	return 1
}

// reportLatency measures the per-query latency distribution once and reports
// its median and 99th percentile. By default the queries come in the order
// of the mean's stream (shuffled across files), so a query usually finds its
// file out of the CPU's cache: this is "p50-ns" and "p99-ns", the harshest
// figure. In the corpus' order ("p50-fileorder-ns") a file's queries follow
// one another, as a crawler's requests to one site do. Those two time each
// query once (reps must be 1: a repetition would find the data in cache and
// average a cold run with warm ones), less the cost of reading the clock,
// measured here. With warm, every query is run once untimed before its
// batch and timed over reps back-to-back repetitions, the time divided by
// reps, so the figures ("p50-warm-ns", "p99-warm-ns") are the matcher's own
// cost with its data in cache.
func reportLatency(b *testing.B, n, reps int, o latencyOrder, query func(i int) bool) {
	if !o.warm && reps != 1 {
		b.Fatalf("a cold latency is one run per query, not %d", reps)
	}
	clock := clockCost()
	lat := make([]float64, n)
	var sink bool
	for k := range n {
		i := k
		if o.idx != nil {
			i = o.idx[k]
		}
		if o.warm {
			sink = query(i) != sink
		}
		start := time.Now()
		for range reps {
			sink = query(i) != sink
		}
		lat[k] = max(0, float64(time.Since(start).Nanoseconds())-clock) / float64(reps)
	}
	runtime.KeepAlive(sink)
	slices.Sort(lat)
	unit := o.label + "-ns"
	b.ReportMetric(percentile(lat, 50), "p50"+unit)
	b.ReportMetric(percentile(lat, 99), "p99"+unit)
}

// clockCost is the median time between two readings of the clock with
// nothing between them, in ns: what a timed interval adds to what it times.
func clockCost() float64 {
	d := make([]float64, 10_001)
	for i := range d {
		start := time.Now()
		d[i] = float64(time.Since(start).Nanoseconds())
	}
	slices.Sort(d)
	return percentile(d, 50)
}

// percentile returns the p-th percentile of sorted (nearest rank).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

// heapAfterGC returns the live heap after two full collections (the second
// one finishes sweeping what the first one freed).
func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// naiveMatch is the textbook dynamic-programming matcher for a robots.txt
// pattern ('*' any run of octets, final '$' anchors the end), O(len(pattern)
// × len(path)): the worst-case benchmarks check the package's verdict
// against it before timing.
func naiveMatch(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	// cur[j]: the pattern read so far matches path[:j] exactly.
	cur := make([]bool, len(path)+1)
	next := make([]bool, len(path)+1)
	cur[0] = true
	for i := range len(pattern) {
		c := pattern[i]
		clear(next)
		if c == '*' {
			seen := false
			for j := range cur {
				seen = seen || cur[j]
				next[j] = seen
			}
		} else {
			for j := range len(path) {
				next[j+1] = cur[j] && path[j] == c
			}
		}
		cur, next = next, cur
	}
	if anchored {
		return cur[len(path)]
	}
	return slices.Contains(cur, true)
}

// ruleFile returns a robots.txt whose "*" group has one Disallow line per
// pattern.
func ruleFile(patterns ...string) []byte {
	var b strings.Builder
	b.WriteString("User-agent: *\n")
	for _, p := range patterns {
		b.WriteString("Disallow: ")
		b.WriteString(p)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}
