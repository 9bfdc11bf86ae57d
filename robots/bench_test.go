package robots_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jimsmart/grobotstxt"
	"github.com/robotsgate/robotsgate/robots"
	"github.com/temoto/robotstxt"
)

// Benchmarks of the robots package, side by side with two baselines:
// github.com/temoto/robotstxt v1.1.2 and github.com/jimsmart/grobotstxt
// v1.0.3 (a Go port of Google's C++ library). Sub-benchmarks are named
// impl=robotsgate|temoto|grobotstxt, so that
//
//	go test -run '^$' -bench . -benchmem -count 6 ./robots/ > bench.out
//	go tool benchstat -col /impl bench.out
//
// shows them in columns. The corpus benchmarks (Parse, Match, RetainedHeap)
// skip without ../shared/testdata (or $ROBOTSGATE_TESTDATA); the worst-case
// ones build their input and always run.

var sinkBool bool

// BenchmarkParse parses the whole corpus per op and reports the time, bytes
// and allocations per file. Each library gets every file whole: Parse reads
// the first robots.MaxFileSize bytes of it, temoto reads all of it (17 files
// exceed 500 KiB). grobotstxt has no parse step of its own (it re-parses the
// body for every query): see BenchmarkMatch.
func BenchmarkParse(b *testing.B) {
	c := robots.LoadCorpus(b)
	b.Run("impl=robotsgate", func(b *testing.B) {
		benchParse(b, c, func(body []byte) error {
			sinkBool = robots.Parse(body) != nil
			return nil
		})
	})
	b.Run("impl=temoto", func(b *testing.B) {
		benchParse(b, c, func(body []byte) error {
			r, err := robotstxt.FromBytes(body)
			sinkBool = r != nil
			return err
		})
	})
}

func benchParse(b *testing.B, c *robots.Corpus, parse func([]byte) error) {
	b.ReportAllocs()
	rejected := 0
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		rejected = 0
		for _, f := range c.Files {
			if parse(f.Body) != nil {
				rejected++
			}
		}
	}
	runtime.ReadMemStats(&after)
	files := float64(b.N) * float64(len(c.Files))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/files, "ns/file")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/files, "B/file")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/files, "allocs/file")
	b.ReportMetric(float64(rejected), "rejected-files")
	// sec/op would be the time for the whole corpus: ns/file says it. The
	// -benchmem figures B/op and allocs/op stay, per corpus.
	b.ReportMetric(0, "ns/op")
}

// BenchmarkMatch: one op is one query of robots-queries.tsv, cycling through
// all 95,640 in a fixed shuffled order over files parsed beforehand (the
// agent column is a product token, or "*"). For grobotstxt one op includes
// its re-parse of the whole body, which is what a query costs with it.
// Besides the mean (sec/op) it reports the median and 99th percentile
// latency per query, measured once per run over all queries: p50-ns and
// p99-ns in the shuffled stream, p50-warm-ns and p99-warm-ns with each
// query's data in cache (see reportLatency).
func BenchmarkMatch(b *testing.B) {
	c := robots.LoadCorpus(b)
	order, inOrder := shuffledQueries(c)
	orders := []latencyOrder{{}, {label: "-fileorder", idx: inOrder}, {label: "-warm", warm: true}}

	b.Run("impl=robotsgate", func(b *testing.B) {
		files := make([]*robots.File, len(c.Files))
		for i, f := range c.Files {
			files[i] = robots.Parse(f.Body)
		}
		type query struct {
			f           *robots.File
			agent, path string
		}
		qs := make([]query, len(order))
		for i, q := range order {
			qs[i] = query{files[q.File], q.Agent, q.Path}
		}
		b.ReportAllocs()
		i := cursor(b)
		for b.Loop() {
			q := &qs[*i]
			sinkBool = q.f.Allowed(q.agent, q.path)
			if *i++; *i == len(qs) {
				*i = 0
			}
		}
		one := func(i int) bool {
			q := &qs[i]
			return q.f.Allowed(q.agent, q.path)
		}
		for _, o := range orders {
			reportLatency(b, len(qs), o.reps(), o, one)
		}
	})

	b.Run("impl=temoto", func(b *testing.B) {
		files := make([]*robotstxt.RobotsData, len(c.Files))
		for i, f := range c.Files {
			files[i], _ = robotstxt.FromBytes(f.Body) // nil when rejected
		}
		type query struct {
			r           *robotstxt.RobotsData
			agent, path string
		}
		qs := make([]query, len(order))
		for i, q := range order {
			qs[i] = query{files[q.File], q.Agent, q.Path}
		}
		// A file temoto rejects gives nothing to match: its caller allows
		// everything, at no cost.
		match := func(q *query) bool { return q.r == nil || q.r.TestAgent(q.path, q.agent) }
		b.ReportAllocs()
		i := cursor(b)
		for b.Loop() {
			sinkBool = match(&qs[*i])
			if *i++; *i == len(qs) {
				*i = 0
			}
		}
		one := func(i int) bool { return match(&qs[i]) }
		for _, o := range orders {
			reportLatency(b, len(qs), o.reps(), o, one)
		}
	})

	b.Run("impl=grobotstxt", func(b *testing.B) {
		bodies := make([]string, len(c.Files))
		for i, f := range c.Files {
			bodies[i] = string(f.Body)
		}
		type query struct{ body, agent, url string }
		qs := make([]query, len(order))
		for i, q := range order {
			qs[i] = query{bodies[q.File], q.Agent, "http://example.com" + q.Path}
		}
		b.ReportAllocs()
		i := cursor(b)
		for b.Loop() {
			q := &qs[*i]
			sinkBool = grobotstxt.AgentAllowed(q.body, q.agent, q.url)
			if *i++; *i == len(qs) {
				*i = 0
			}
		}
		// A query costs µs to ms here: one repetition is enough to make the
		// clock's cost negligible, and a warm pass would change nothing but
		// the run time (every query re-parses the body).
		reportLatency(b, len(qs), 1, latencyOrder{}, func(i int) bool {
			q := &qs[i]
			return grobotstxt.AgentAllowed(q.body, q.agent, q.url)
		})
	})
}

// BenchmarkRetainedHeap parses the whole corpus, keeps every result and
// reports the live heap they hold: per file (retained-B/file) and as a ratio
// to the input each library read (retained/size: robots.Parse reads at most
// robots.MaxFileSize bytes of a file, temoto all of it). The large files,
// many of them HTML, weigh most in that ratio, so it also reports the ratio
// for the files of at most 1 KiB alone (retained/size-le1KiB: over half of
// the corpus, whose median file is 535 B).
func BenchmarkRetainedHeap(b *testing.B) {
	c := robots.LoadCorpus(b)
	b.Run("impl=robotsgate", func(b *testing.B) {
		benchRetained(b, c, true, func(body []byte) any { return robots.Parse(body) })
	})
	b.Run("impl=temoto", func(b *testing.B) {
		benchRetained(b, c, false, func(body []byte) any {
			r, _ := robotstxt.FromBytes(body)
			return r
		})
	})
}

func benchRetained(b *testing.B, c *robots.Corpus, capped bool, parse func([]byte) any) {
	const small = 1 << 10
	keep := make([]any, len(c.Files))
	input, smallInput := 0, 0
	for _, f := range c.Files {
		n := len(f.Body)
		if capped {
			n = min(n, robots.MaxFileSize)
		}
		input += n
		if len(f.Body) <= small {
			smallInput += n
		}
	}
	var retained, retainedSmall int64
	for b.Loop() {
		clear(keep)
		before := heapAfterGC()
		for i, f := range c.Files {
			if len(f.Body) <= small {
				keep[i] = parse(f.Body)
			}
		}
		mid := heapAfterGC()
		for i, f := range c.Files {
			if len(f.Body) > small {
				keep[i] = parse(f.Body)
			}
		}
		after := heapAfterGC()
		retained = int64(after) - int64(before)
		retainedSmall = int64(mid) - int64(before)
	}
	sinkBool = keep[0] != nil  // keep stays live through the measurements
	b.ReportMetric(0, "ns/op") // the time is parsing plus six collections
	b.ReportMetric(float64(retained)/float64(len(c.Files)), "retained-B/file")
	b.ReportMetric(float64(retained)/float64(input), "retained/size")
	b.ReportMetric(float64(retainedSmall)/float64(smallInput), "retained/size-le1KiB")
}

// oursOnly ends the names of the worst-case benchmarks, which have no
// baseline, so that benchstat -col /impl puts them in the robotsgate column
// of the same tables instead of a column of their own.
const oursOnly = "impl=robotsgate"

// pathOf returns a request path of n octets: "/" and then octets cycling
// through fill.
func pathOf(n int, fill string) string {
	var s strings.Builder
	s.WriteByte('/')
	for s.Len() < n {
		s.WriteString(fill[:min(len(fill), n-s.Len())])
	}
	return s.String()
}

// BenchmarkWorstCaseStars matches one pattern with 1,000 '*' against a 2 KiB
// path, in several adversarial shapes (target: ≤ 1 ms, no allocation). Each
// verdict is first checked against a dynamic-programming matcher.
func BenchmarkWorstCaseStars(b *testing.B) {
	const stars = 1000
	as := pathOf(2048, "a")
	cases := []struct {
		name, pattern, path string
	}{
		// The shape: "a" segments that all occur, and an anchored
		// "b" that does not end the path.
		{"a*-anchored-miss", "/" + strings.Repeat("a*", stars) + "b$", as},
		// Unanchored: the last segment is searched through the whole rest.
		{"*a-unanchored-miss", "/" + strings.Repeat("*a", stars-1) + "*b", as},
		// Only stars, then an anchored miss.
		{"stars-only-miss", "/" + strings.Repeat("*", stars) + "b$", as},
		// Each segment is two octets and found one step further; matches.
		{"*ab-anchored-match", "/" + strings.Repeat("*ab", stars) + "$", pathOf(48, "x") + strings.Repeat("ab", 1000)},
		// Segments longer than one octet that almost match everywhere.
		{"*aaab-miss", "/" + strings.Repeat("*aaab", stars), as},
		// Stars and segments against a path with the segments spread out;
		// matches (512 a…b pairs for 500).
		{"*a*b-match-spread", "/" + strings.Repeat("*a*b", stars/2) + "$", "/" + strings.Repeat("xaxb", 512)[1:]},
	}
	for _, tc := range cases {
		b.Run("shape="+tc.name+"/"+oursOnly, func(b *testing.B) {
			if n := strings.Count(tc.pattern, "*"); n != stars {
				b.Fatalf("pattern has %d stars", n)
			}
			benchOnePattern(b, tc.pattern, tc.path)
		})
	}
}

// benchOnePattern times File.Allowed for a file with a single Disallow
// pattern, after checking the verdict against naiveMatch.
func benchOnePattern(b *testing.B, pattern, path string) {
	f := robots.Parse(ruleFile(pattern))
	want := !naiveMatch(pattern, path)
	if got := f.Allowed("bot", path); got != want {
		b.Fatalf("Allowed = %v, want %v", got, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		sinkBool = f.Allowed("bot", path)
	}
}

// BenchmarkWorstCaseFile matches 2 KiB paths against a pre-parsed file of
// nearly robots.MaxFileSize (500 KiB) of wildcard rules, none of which
// matches, so that every rule is tried (target: ≤ 1 ms per match, no
// allocation). It reports the number of rules and the share of the matches
// that stopped at robots.MaxMatchWork (too-costly: refused, conservatively).
func BenchmarkWorstCaseFile(b *testing.B) {
	shapes := []struct {
		name string
		rule func(i int) string
	}{
		// The shape, /a*a*a*…$ with 1 to 64 stars.
		{"a*-anchored", func(i int) string { return "/" + strings.Repeat("a*", 1+i%64) + "b$" }},
		// The same, unanchored and starting with a star: every rule searches
		// the whole path for its last segment.
		{"*a-unanchored", func(i int) string { return "/" + strings.Repeat("*a", 1+i%64) + "*b" }},
		// As many rules as fit, each searching the whole path once.
		{"short-*b", func(i int) string { return "/*b" + strconv.Itoa(i) }},
		// The same ending in an x, which no path holds: against the path
		// of b1b1…, every rule's search finds a candidate at every other
		// octet (10 ms per match without robots.MaxMatchWork).
		{"short-*bx", func(i int) string { return "/*b" + strconv.Itoa(i) + "x" }},
	}
	// None of the paths matches a rule: the first four contain no 'b', which
	// every pattern needs; the last is made of what the short-*b rules look
	// for, so that their search finds a candidate at every other octet.
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 2047)
	for i := range random {
		random[i] = "acdefghij/-_.?=&"[r.IntN(16)]
	}
	paths := []string{
		pathOf(2048, "a"),
		pathOf(2048, "aaaaaaac"),
		pathOf(2048, "a/"),
		"/" + string(random),
		"/" + strings.Repeat("b1", 1023) + "b",
	}
	for _, s := range shapes {
		b.Run("shape="+s.name+"/"+oursOnly, func(b *testing.B) {
			var patterns []string
			size := len(ruleFile())
			for i := 0; ; i++ {
				p := s.rule(i)
				if size+len(ruleFile(p))-len(ruleFile()) > robots.MaxFileSize {
					break
				}
				size += len(ruleFile(p)) - len(ruleFile())
				patterns = append(patterns, p)
			}
			body := ruleFile(patterns...)
			f := robots.Parse(body)
			if f.Truncated || len(body) < robots.MaxFileSize-100 {
				b.Fatalf("file of %d bytes, truncated %v", len(body), f.Truncated)
			}
			costly := 0
			for _, p := range paths {
				if len(p) != 2048 {
					b.Fatalf("bad path %q", p)
				}
				switch d := f.Group("bot").Decide(p); {
				case d.TooCostly:
					costly++
				case !d.Allowed || d.Matched:
					b.Fatalf("Decide(%.20q...) = %v, want no match", p, d)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				sinkBool = f.Allowed("bot", paths[i])
				if i++; i == len(paths) {
					i = 0
				}
			}
			b.ReportMetric(float64(len(patterns)), "rules")
			b.ReportMetric(float64(costly)/float64(len(paths)), "too-costly")
			// The mean hides the slowest path: time each one alone (the
			// median of 21 runs) and report the slowest.
			slowest := 0.0
			for _, p := range paths {
				runs := make([]float64, 21)
				for k := range runs {
					start := time.Now()
					sinkBool = f.Allowed("bot", p)
					runs[k] = float64(time.Since(start).Nanoseconds())
				}
				slices.Sort(runs)
				slowest = max(slowest, runs[len(runs)/2])
			}
			b.ReportMetric(slowest, "slowest-path-ns")
		})
	}
}

// BenchmarkWorstCaseGrowth times one match of a pattern of n octets,
// /*a*a*…*a*b, against a path of m octets (m ≥ 2n) made of "xa" pairs and
// a final b, so that the match goes through both in full: it finds the b
// at the end of the path, then places every a segment one step further
// than the last (a path of a's alone would not do: its match stops after
// min(n, m) octets). Linear in pattern + path, ns/octet, the time divided
// by n + m, stays flat across the grid; ps/cell, the time divided by n × m,
// would stay flat for a matcher that costs pattern × path.
func BenchmarkWorstCaseGrowth(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		for _, m := range []int{2 * n, 8 * n, 32 * n} {
			b.Run(fmt.Sprintf("pattern=%d/path=%d/%s", n, m, oursOnly), func(b *testing.B) {
				pattern := "/" + strings.Repeat("*a", (n-3)/2) + "*b"
				pattern += strings.Repeat("*", n-len(pattern))
				path := "/" + strings.Repeat("xa", (m-2)/2)
				path += strings.Repeat("x", m-1-len(path)) + "b"
				if len(pattern) != n || len(path) != m {
					b.Fatalf("sizes %d, %d", len(pattern), len(path))
				}
				f := robots.Parse(ruleFile(pattern))
				if f.Allowed("bot", path) || !naiveMatch(pattern, path) {
					b.Fatal("the pattern does not match the path")
				}
				b.ReportAllocs()
				for b.Loop() {
					sinkBool = f.Allowed("bot", path)
				}
				perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				b.ReportMetric(perOp/float64(n+m), "ns/octet")
				b.ReportMetric(perOp*1000/float64(n*m), "ps/cell")
			})
		}
	}
}
