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
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/robots"
)

// maxLine bounds one audit line: the writer caps what a record quotes
// (audit.Record.Cap), so a longer line is not one it wrote.
const maxLine = 1 << 20

// SkipFunc is told of a line that is not a record: its file, its number
// and why. Reading goes on after it.
type SkipFunc func(file string, line int, err error)

// ReadAudit calls fn for every record of the audit files, in order
// (checkpoint lines, which are no decision, left out: CheckChain reads
// them), and skip for every line that is not one (not JSON, longer than 1 MiB): one
// bad line, a torn one or an edited one, never stops the reading. An
// error fn returns stops it, and so does a file that cannot be read.
func ReadAudit(files []string, fn func(rec *audit.Record, file string, line int) error, skip SkipFunc) error {
	for _, name := range files {
		if err := readFile(name, fn, skip); err != nil {
			return err
		}
	}
	return nil
}

func readFile(name string, fn func(*audit.Record, string, int) error, skip SkipFunc) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	var rec audit.Record
	return eachLine(f, func(n int, line []byte) error {
		rec = audit.Record{}
		if err := decodeRecord(line, &rec); err != nil {
			skip(name, n, err)
			return nil
		}
		if rec.Checkpoint != nil {
			return nil // no decision: CheckChain reads checkpoints
		}
		return fn(&rec, name, n)
	}, func(n int, err error) { skip(name, n, err) }, name)
}

// decodeRecord reads one audit line. Figures no proxy writes (a time
// before 1970 or after 2200, a negative or absurd wait or duration, a
// send time outside the request's span) make it
// no record: an edited line, which the readers must not compute with.
func decodeRecord(line []byte, rec *audit.Record) error {
	if err := json.Unmarshal(line, rec); err != nil {
		return fmt.Errorf("not an audit record: %w", err)
	}
	if y := rec.Time.Year(); !rec.Time.IsZero() && (y < 1970 || y > 2200) {
		return fmt.Errorf("not an audit record: time %s is out of range", rec.Time.Format(time.RFC3339))
	}
	for _, f := range []struct {
		name string
		ms   float64
	}{{"wait_ms", rec.WaitMS}, {"duration_ms", rec.DurationMS}} {
		if !(0 <= f.ms && f.ms <= maxMS) {
			return fmt.Errorf("not an audit record: %s %g is out of range", f.name, f.ms)
		}
	}
	// A request is sent between its arrival and the end of its response.
	if !(0 <= rec.SentMS && rec.SentMS <= rec.DurationMS+1000) {
		return fmt.Errorf("not an audit record: sent_ms %g is not between its arrival and the end of its response", rec.SentMS)
	}
	return nil
}

// maxMS bounds the milliseconds a record may give (a wait, a duration):
// about 31 years.
const maxMS = 1e12

// errTooLong is a line longer than maxLine.
var errTooLong = fmt.Errorf("longer than %d bytes: not a line the proxy writes", maxLine)

// eachLine calls fn for every line of r that is not blank (without its end
// of line; valid until fn returns), with its number, and long for a line
// longer than maxLine, which is skipped. It stops at fn's error.
func eachLine(r io.Reader, fn func(n int, line []byte) error, long func(n int, err error), name string) error {
	br := bufio.NewReaderSize(r, maxLine)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long(n, errTooLong)
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if err := fn(n, bytes.TrimRight(line, "\r\n")); err != nil {
				return err
			}
		}
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return fmt.Errorf("%s: %w", name, err)
		}
	}
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
