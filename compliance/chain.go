package compliance

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
)

// ChainResult is what CheckChain found of the audit logs' hash chain
// (audit.Record.Prev) and signed checkpoints (audit.Checkpoint).
type ChainResult struct {
	// Lines counts the lines read; Chained those that carry a link to the
	// line before them.
	Lines, Chained int64
	// Breaks are where a line's link does not match the line before it: a
	// line deleted, inserted, reordered or edited after it was written.
	Breaks []ChainPlace
	// Torn are lines that are not whole records, which the chain goes on
	// through: the last line of a file cut by a crash.
	Torn []ChainPlace
	// Checkpoints counts the checkpoints that the key verifies and that
	// sign the head before them; BadCheckpoints are the others.
	Checkpoints    int64
	BadCheckpoints []ChainPlace
	// Key is the fingerprint of the key checkpoints were checked with.
	Key string
	// LastCheckpoint is where the last good checkpoint is ("" if none);
	// Unsigned counts the lines after it, which no checkpoint vouches for.
	LastCheckpoint string
	Unsigned       int64
	// Start says the first line links to a line before the files read
	// (an earlier rotated file), "" when it starts the chain or has no link.
	Start string
}

// ChainPlace is a line of an audit file and what is wrong with it.
type ChainPlace struct {
	File string
	Line int
	Why  string
}

func (p ChainPlace) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Why) }

// Whole reports whether the chain has no break and every checkpoint
// verifies.
func (r *ChainResult) Whole() bool { return len(r.Breaks) == 0 && len(r.BadCheckpoints) == 0 }

// CheckChain reads the audit files in order (a rotated file before its
// successor) and checks that every line links to the line before it and
// that every checkpoint is signed by pub (nil: checkpoints are counted,
// not verified) over the head it follows. It reads each line once and
// keeps nothing but the last hash.
func CheckChain(files []string, pub ed25519.PublicKey) (*ChainResult, error) {
	c := &chainCheck{r: &ChainResult{}, pub: pub}
	if pub != nil {
		c.r.Key = audit.KeyFingerprint(pub)
	}
	if len(files) > 0 {
		c.head = keptHead(files[len(files)-1])
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		err = eachLine(f, func(n int, line []byte) error { c.line(name, n, line); return nil },
			func(n int, err error) { c.long(name, n, err) }, name)
		f.Close()
		if err != nil {
			return nil, err
		}
		c.lastFile = name
	}
	if c.head != "" && !c.headSeen {
		c.r.Breaks = append(c.r.Breaks, ChainPlace{c.lastFile, c.lastLine + 1, "the log ends before the head kept in " +
			filepath.Base(c.lastFile) + ".head: lines were cut from its end"})
	}
	return c.r, nil
}

// keptHead reads the head the writer keeps beside a log (audit.Writer
// saves it at each checkpoint and on close): "" when there is none.
func keptHead(file string) string {
	data, err := os.ReadFile(file + ".head")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

type chainCheck struct {
	r       *ChainResult
	pub     ed25519.PublicKey
	prev    string // hash of the line before
	started bool   // a line was read
	linked  bool   // a line with a link was read: every later line needs one
	// head is the head kept beside the last file ("" if none): some line
	// read, or the line the first one links to, must have it, or lines
	// were cut from the end; headSeen says one did.
	head     string
	headSeen bool
	lastFile string
	lastLine int
}

// line checks one line and moves the head to it.
func (c *chainCheck) line(file string, n int, line []byte) {
	c.r.Lines++
	c.r.Unsigned++
	c.lastLine = n
	link, ok := linkOf(line)
	if c.head != "" && !c.started && link == c.head {
		c.headSeen = true
	}
	whole := wholeLine(line)
	if !whole {
		c.r.Torn = append(c.r.Torn, ChainPlace{file, n, "not a whole record (cut off by a crash, or damaged)"})
	}
	switch {
	case ok:
		c.r.Chained++
		if !c.started && link != "" {
			c.r.Start = fmt.Sprintf("%s:%d links to a line before the files read (an earlier, rotated file)", file, n)
		} else if c.started && link != c.prev {
			c.r.Breaks = append(c.r.Breaks, ChainPlace{file, n, "chain broken: the previous line's hash does not match " +
				"(a line removed, added, moved or changed before this one)"})
		}
		c.linked = true
		if whole && bytes.Contains(line, []byte(`"checkpoint":`)) {
			c.checkpoint(file, n, line, link)
		}
	case c.linked && whole:
		c.r.Breaks = append(c.r.Breaks, ChainPlace{file, n, "chain broken: the line carries no link to the line before it"})
	}
	c.prev, c.started = audit.LineHash(line), true
	if c.prev == c.head {
		c.headSeen = true
	}
}

// wholeLine reports whether a line looks whole: it starts with '{' and
// ends with '}', as every line the writers write does, or else parses as
// JSON. A line cut by a crash ends elsewhere, but for a cut just after a
// nested object's '}', which the readers' decoding still reports (verify's
// "skipped"); the chain itself is checked the same either way. Parsing
// every line cost half of the chain check.
func wholeLine(line []byte) bool {
	if len(line) > 1 && line[0] == '{' && line[len(line)-1] == '}' {
		return true
	}
	return json.Valid(line)
}

// long notes a line too long to be one the writer wrote; the chain
// cannot go on through it.
func (c *chainCheck) long(file string, n int, err error) {
	c.r.Lines++
	c.lastLine = n
	c.r.Breaks = append(c.r.Breaks, ChainPlace{file, n, err.Error()})
	c.prev, c.started = "", true
}

// checkpoint checks a checkpoint line whose link is head.
func (c *chainCheck) checkpoint(file string, n int, line []byte, head string) {
	var l struct {
		Checkpoint *audit.Checkpoint `json:"checkpoint"`
	}
	switch {
	case json.Unmarshal(line, &l) != nil || l.Checkpoint == nil:
		c.r.BadCheckpoints = append(c.r.BadCheckpoints, ChainPlace{file, n, "not a checkpoint"})
	case l.Checkpoint.Head != head:
		c.r.BadCheckpoints = append(c.r.BadCheckpoints, ChainPlace{file, n, "checkpoint of another head than the line before it"})
	case c.pub != nil && !l.Checkpoint.Verify(c.pub):
		c.r.BadCheckpoints = append(c.r.BadCheckpoints, ChainPlace{file, n,
			fmt.Sprintf("checkpoint signature does not verify with key %s (signed by %s)", c.r.Key, l.Checkpoint.Key)})
	default:
		c.r.Checkpoints++
		c.r.LastCheckpoint, c.r.Unsigned = fmt.Sprintf("%s:%d", file, n), 0
	}
}

// linkPrefix starts every chained line (audit.Record.Prev comes first).
var linkPrefix = []byte(`{"prev_sha256":"`)

// linkOf returns a line's link without decoding it: the hex after
// linkPrefix; ok is false when the line has none.
func linkOf(line []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(line, linkPrefix)
	if !ok {
		return "", false
	}
	i := bytes.IndexByte(rest, '"')
	if i != 0 && i != 64 {
		return "", false
	}
	return string(rest[:i]), true
}

// CheckFetchLogs checks the chain of each of the archive's fetch logs
// (archive.FetchLogs) as CheckChain does, each file a chain of its own
// that starts at its first line: a first line linking to another is a
// break (lines cut from its start). Fetch logs written before the chain
// have no links and no breaks.
func CheckFetchLogs(dir string, pub ed25519.PublicKey) (*ChainResult, error) {
	logs, err := archive.FetchLogs(dir)
	if err != nil {
		return nil, err
	}
	all := &ChainResult{}
	if pub != nil {
		all.Key = audit.KeyFingerprint(pub)
	}
	for _, name := range logs {
		r, err := CheckChain([]string{name}, pub)
		if err != nil {
			return nil, err
		}
		all.Lines += r.Lines
		all.Chained += r.Chained
		all.Checkpoints += r.Checkpoints
		all.Unsigned += r.Unsigned
		all.Breaks = append(all.Breaks, r.Breaks...)
		all.Torn = append(all.Torn, r.Torn...)
		all.BadCheckpoints = append(all.BadCheckpoints, r.BadCheckpoints...)
		if r.Start != "" {
			all.Breaks = append(all.Breaks, ChainPlace{name, 1, "chain broken: the fetch log's first line links to a line before it (lines cut from its start)"})
		}
	}
	return all, nil
}
