// Package compliance reads the evidence robotsgate keeps, the audit log
// and the robots.txt archive, for the commands that prove what it
// enforced: verify (replay every decision) and report (what happened,
// for a reviewer). It reads streams: memory grows with the number of
// distinct robots.txt bodies, not with the length of the logs.
//
// It must not write to the evidence, and must not judge by rules of its
// own: a decision is replayed with the very code the proxy used (packages
// robots and policy).
package compliance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/robots"
)

// maxLine bounds one audit line (a record with a 32 KiB URL fits).
const maxLine = 1 << 20

// ReadAudit calls fn for every record of the audit files, in order. A
// line that is not a record is an error naming its file and line; so is
// an error fn returns (reading stops).
func ReadAudit(files []string, fn func(rec *audit.Record, file string, line int) error) error {
	for _, name := range files {
		if err := readFile(name, fn); err != nil {
			return err
		}
	}
	return nil
}

func readFile(name string, fn func(*audit.Record, string, int) error) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var rec audit.Record
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 { // no copy of the line
			continue
		}
		rec = audit.Record{}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return fmt.Errorf("%s:%d: not an audit record: %w", name, n, err)
		}
		if err := fn(&rec, name, n); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Bodies reads archived robots.txt bodies and keeps each one parsed,
// once per SHA-256. It is safe for concurrent use.
type Bodies struct {
	dir   string
	mu    sync.Mutex
	files map[string]bodyEntry
}

type bodyEntry struct {
	file *robots.File
	err  error
}

// NewBodies reads the archive in dir.
func NewBodies(dir string) *Bodies {
	return &Bodies{dir: dir, files: map[string]bodyEntry{}}
}

// File returns the parsed body named sum (an error wrapping
// fs.ErrNotExist when the archive does not have it).
func (b *Bodies) File(sum string) (*robots.File, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.files[sum]; ok {
		return e.file, e.err
	}
	body, err := archive.ReadBody(b.dir, sum)
	e := bodyEntry{err: err}
	if err == nil {
		e.file = robots.Parse(body)
	}
	b.files[sum] = e
	return e.file, e.err
}

// Target returns the request-target of an audit record's URL (what
// follows scheme://authority; "/" when nothing does).
func Target(rawURL string) string {
	rest := rawURL
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		if rest[i] == '?' {
			return "/" + rest[i:]
		}
		return rest[i:]
	}
	return "/"
}

// Replay judges a record again with f, as the proxy judged it: the
// group of the record's agent, its target, its strict_paths setting.
func Replay(f *robots.File, rec *audit.Record) robots.Decision {
	g := f.GroupForUserAgent(rec.Agent)
	if rec.StrictPaths {
		return g.DecideStrict(Target(rec.URL))
	}
	return g.Decide(Target(rec.URL))
}
