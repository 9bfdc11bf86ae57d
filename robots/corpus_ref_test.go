package robots

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/temoto/robotstxt"
)

// The real-world corpus (../shared/testdata: robots-corpus/ with 4,782
// robots.txt files and MANIFEST.tsv, and robots-queries.tsv with 95,640
// agent/path queries) is not part of the repository. Tests and benchmarks
// that use it skip when it is absent, so a fresh clone passes on its own.
// ROBOTSGATE_TESTDATA points elsewhere; when it is set, a missing corpus is
// an error rather than a skip.

// TestdataEnv names the environment variable that overrides the location of
// the shared test data.
const TestdataEnv = "ROBOTSGATE_TESTDATA"

// Corpus is the loaded real-world corpus. It is exported (from a test file
// only) so that the benchmarks in package robots_test share this loader.
type Corpus struct {
	Files   []CorpusFile
	Queries []CorpusQuery // grouped by file, in the order of the TSV
	// Bytes is the total size of the files; ParsedBytes counts each file
	// only up to MaxFileSize, the part Parse reads.
	Bytes, ParsedBytes int
}

// CorpusFile is one robots.txt of the corpus.
type CorpusFile struct {
	Name string
	Body []byte
}

// CorpusQuery is one row of robots-queries.tsv.
type CorpusQuery struct {
	File  int    // index into Corpus.Files
	Agent string // a product token, or "*"
	Path  string // request-target
	Kind  string // how the query was generated (rule-exact, nearmiss-case...)
}

var (
	corpusOnce sync.Once
	corpus     *Corpus
	corpusSkip string
	corpusErr  error
)

// LoadCorpus returns the corpus, reading it on first use. It skips tb when
// the corpus is absent and fails it when the corpus is unreadable.
func LoadCorpus(tb testing.TB) *Corpus {
	tb.Helper()
	corpusOnce.Do(func() { corpus, corpusSkip, corpusErr = readCorpus() })
	if corpusErr != nil {
		tb.Fatal(corpusErr)
	}
	if corpusSkip != "" {
		tb.Skip(corpusSkip)
	}
	return corpus
}

func readCorpus() (c *Corpus, skip string, err error) {
	dir := os.Getenv(TestdataEnv)
	explicit := dir != ""
	if !explicit {
		dir = filepath.Join("..", "..", "shared", "testdata")
	}
	manifest := filepath.Join(dir, "robots-corpus", "MANIFEST.tsv")
	queries := filepath.Join(dir, "robots-queries.tsv")
	for _, p := range []string{manifest, queries} {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) && !explicit {
			return nil, fmt.Sprintf("corpus not found (%s); set %s to its directory", p, TestdataEnv), nil
		}
	}
	c = &Corpus{}
	index := map[string]int{}
	err = readTSV(manifest, func(col map[string]string) error {
		name := col["file"]
		body, err := os.ReadFile(filepath.Join(dir, "robots-corpus", name))
		if err != nil {
			return err
		}
		if n, err := strconv.Atoi(col["bytes"]); err != nil || n != len(body) {
			return fmt.Errorf("%s: %d bytes, manifest says %q", name, len(body), col["bytes"])
		}
		index[name] = len(c.Files)
		c.Files = append(c.Files, CorpusFile{Name: name, Body: body})
		c.Bytes += len(body)
		c.ParsedBytes += min(len(body), MaxFileSize)
		return nil
	}, "file", "bytes")
	if err != nil {
		return nil, "", err
	}
	err = readTSV(queries, func(col map[string]string) error {
		i, ok := index[col["file"]]
		if !ok {
			return fmt.Errorf("query for %q, which is not in the manifest", col["file"])
		}
		c.Queries = append(c.Queries, CorpusQuery{File: i, Agent: col["agent"], Path: col["path"], Kind: col["kind"]})
		return nil
	}, "file", "agent", "path", "kind")
	if err != nil {
		return nil, "", err
	}
	if len(c.Files) == 0 || len(c.Queries) == 0 {
		return nil, "", fmt.Errorf("corpus in %s is empty", dir)
	}
	return c, "", nil
}

// readTSV calls row for every data row of a tab-separated file whose header
// names (at least) the wanted columns. Fields are raw: no quoting.
func readTSV(path string, row func(col map[string]string) error, want ...string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	var header []string
	col := map[string]string{}
	for n := 1; sc.Scan(); n++ {
		fields := strings.Split(sc.Text(), "\t")
		if header == nil {
			header = fields
			for _, w := range want {
				if !strings.Contains("\t"+sc.Text()+"\t", "\t"+w+"\t") {
					return fmt.Errorf("%s: header has no %q column", path, w)
				}
			}
			continue
		}
		if len(fields) != len(header) {
			return fmt.Errorf("%s:%d: %d fields, want %d", path, n, len(fields), len(header))
		}
		for i, h := range header {
			col[h] = fields[i]
		}
		if err := row(col); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// byFile returns the queries of each file: the TSV groups them by file, but
// this does not rely on it.
func (c *Corpus) byFile() [][]CorpusQuery {
	out := make([][]CorpusQuery, len(c.Files))
	for _, q := range c.Queries {
		out[q.File] = append(out[q.File], q)
	}
	return out
}

// forEachFile runs fn for every file on GOMAXPROCS workers.
func forEachFile(c *Corpus, fn func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range c.Files {
		next <- i
	}
	close(next)
	wg.Wait()
}

// TestCorpusAgreesWithGoogleReference checks Parse+Group+Decide against the
// naive port of Google's streaming matcher (refDecide) on every corpus query:
// same verdict and same deciding line. Under the race detector, which makes
// the per-query re-parse of the oracle about ten times slower, it checks
// every raceSample-th file (see race_test.go).
func TestCorpusAgreesWithGoogleReference(t *testing.T) {
	c := LoadCorpus(t)
	perFile := c.byFile()

	type disagreement struct {
		q        CorpusQuery
		ours     Decision
		refAllow bool
		refLine  int
	}
	var (
		mu        sync.Mutex
		bad       []disagreement
		checked   int
		files     int
		tm        temotoCount
		badFiles  = map[int]bool{}
		tmByFiles = map[int]bool{}
	)
	forEachFile(c, func(i int) {
		if i%raceSample != 0 || len(perFile[i]) == 0 {
			return
		}
		body := c.Files[i].Body
		capped := body[:min(len(body), MaxFileSize)]
		f := Parse(body)
		ref := string(capped)
		tr, terr := robotstxt.FromBytes(body)
		var local []disagreement
		var ltm temotoCount
		for _, q := range perFile[i] {
			d := f.Group(q.Agent).Decide(q.Path)
			line := 0
			if d.Matched {
				line = d.Rule.Line
			}
			ra, rl := refDecide(ref, q.Agent, q.Path)
			if ra != d.Allowed || rl != line {
				local = append(local, disagreement{q, d, ra, rl})
			}
			ltm.add(d.Allowed, tr, terr, q)
		}
		mu.Lock()
		defer mu.Unlock()
		checked += len(perFile[i])
		files++
		bad = append(bad, local...)
		for _, d := range local {
			badFiles[d.q.File] = true
		}
		if ltm.queries > 0 {
			tmByFiles[i] = true
		}
		tm.merge(ltm)
	})

	for n, d := range bad {
		if n == 20 {
			t.Errorf("... and %d more", len(bad)-n)
			break
		}
		t.Errorf("%s: agent %q path %q: ours %v (%v), Google reference allowed=%v line %d",
			c.Files[d.q.File].Name, d.q.Agent, d.q.Path, d.ours.Allowed, d.ours, d.refAllow, d.refLine)
	}
	t.Logf("checked %d queries over %d files: %d disagreements with the Google reference, in %d files",
		checked, files, len(bad), len(badFiles))
	t.Logf("temoto/robotstxt v1.1.2 disagrees with us on %d of %d queries (%.2f%%), in %d of %d files (%.1f%%); "+
		"it allows what Google's rules disallow on %d, disallows what they allow on %d; "+
		"it rejects %d files whole (counted as allow-all, disagreeing on %d queries)",
		tm.queries, checked, pct(tm.queries, checked), len(tmByFiles), files, pct(len(tmByFiles), files),
		tm.looser, tm.stricter, tm.rejected, tm.rejectedQueries)
	if len(bad) > 0 {
		t.Fatalf("%d of %d queries disagree with the Google reference", len(bad), checked)
	}
}

// temotoCount tallies where temoto/robotstxt's verdict differs from ours.
type temotoCount struct {
	queries, looser, stricter int
	rejected, rejectedQueries int
	rejectedSeen              map[int]bool
}

func (t *temotoCount) add(ours bool, r *robotstxt.RobotsData, err error, q CorpusQuery) {
	theirs := true // a file temoto rejects: a caller falls back to allow-all
	if err != nil {
		if t.rejectedSeen == nil {
			t.rejectedSeen = map[int]bool{}
		}
		t.rejectedSeen[q.File] = true
	} else {
		theirs = r.TestAgent(q.Path, q.Agent)
	}
	if theirs == ours {
		return
	}
	t.queries++
	if err != nil {
		t.rejectedQueries++
	}
	if theirs {
		t.looser++
	} else {
		t.stricter++
	}
}

func (t *temotoCount) merge(o temotoCount) {
	t.queries += o.queries
	t.looser += o.looser
	t.stricter += o.stricter
	t.rejectedQueries += o.rejectedQueries
	t.rejected += len(o.rejectedSeen)
}

func pct(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(n) / float64(total)
}
