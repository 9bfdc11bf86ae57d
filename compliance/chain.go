package compliance

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/auditlog"
)

// ChainResult is what CheckChain found of the audit logs' hash chain
// (audit.Record.Prev) and signed checkpoints (audit.Checkpoint). Failures
// says whether it is evidence.
type ChainResult struct {
	// Lines counts the lines read; Chained those that carry a link to the
	// line before them; Records the whole lines that are no checkpoint.
	Lines, Chained, Records int64
	// Unlinked counts the lines without a link read before a file's
	// chain begins (all of a file with none): a log written before the
	// chain, or one stripped of it.
	Unlinked int64
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
	// Witness says a witness's checkpoints were checked (ChainOptions.
	// Witness); Witnessed counts the verified checkpoints it saw, which
	// are then the only ones that cover lines.
	Witness   bool
	Witnessed int64
	// WitnessMissing are checkpoints the witness saw that the log does
	// not hold (it was rewritten, or cut); WitnessBefore counts those
	// older than the first line read, when the log's start was not read
	// (Start).
	WitnessMissing []string
	WitnessBefore  int
	// LastCheckpoint is where the last checkpoint that covers the lines
	// before it is ("" if none): verified with Key (and seen by the
	// witness); LastCheckpointTime is when it was signed. Unsigned counts
	// the lines after it, which no checkpoint covers, UnsignedFrom and
	// UnsignedTo the times of the first and the last of them (zero when
	// none carries one), and Tail the interval that checkpoint promised,
	// which they must not exceed.
	LastCheckpoint           string
	LastCheckpointTime       time.Time
	Unsigned                 int64
	UnsignedFrom, UnsignedTo time.Time
	Tail                     audit.Interval
	// Uncovered names the logs whose records no checkpoint covers at all
	// (checked with a key).
	Uncovered []ChainPlace
	// Gaps are runs of records between two checkpoints that cover them,
	// or after the last, longer or later than the interval the checkpoint
	// before them promised: checkpoints were removed.
	Gaps []ChainPlace
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
// verifies: the lines are as the chain says, which proves nothing when
// someone recomputed it. Failures says whether the logs are evidence.
func (r *ChainResult) Whole() bool { return len(r.Breaks) == 0 && len(r.BadCheckpoints) == 0 }

// ChainOptions is what CheckChain checks the checkpoints with.
type ChainOptions struct {
	// Key verifies the checkpoints; nil counts them without verifying,
	// and then no line is covered.
	Key ed25519.PublicKey
	// Interval is what a checkpoint that states no interval (written
	// before checkpoints did) is taken to promise, in records only: the
	// configuration's log.checkpoint_records. Zero: such checkpoints
	// bound nothing.
	Interval audit.Interval
	// Witness, when set, is what a witness saw of the log: only the
	// checkpoints it saw cover lines, and every one it saw must be in
	// the log.
	Witness *Witnessed
}

// CheckChain reads the audit files in order (a rotated file before its
// successor) and checks that every line links to the line before it,
// that every checkpoint is signed by o.Key (nil: checkpoints are
// counted, not verified) over the head it follows, and that the
// checkpoints cover the lines as they promised. It reads each line once
// and keeps nothing but the last hash and counts.
func CheckChain(files []string, o ChainOptions) (*ChainResult, error) {
	c := &chainCheck{r: &ChainResult{Witness: o.Witness != nil}, o: o}
	if o.Key != nil {
		c.r.Key = audit.KeyFingerprint(o.Key)
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
	c.end()
	return c.r, nil
}

// keptHead reads the head the writer keeps beside a log (auditlog.Writer
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
	o       ChainOptions
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
	// cover is the last checkpoint that covers the lines before it (nil:
	// none yet), run the records since it (coverage.go).
	cover *coverPoint
	run   run
	// firstTime is the first time read (a checkpoint's, a record's).
	firstTime time.Time
	// found are the witness's checkpoints the log holds (witnessKey).
	found map[string]bool
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
	checkpoint := ok && whole && bytes.Contains(line, []byte(`"checkpoint":`))
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
		if checkpoint {
			c.checkpoint(file, n, line, link)
		}
	case c.linked && whole:
		c.r.Breaks = append(c.r.Breaks, ChainPlace{file, n, "chain broken: the line carries no link to the line before it"})
	case !c.linked:
		c.r.Unlinked++
	}
	if whole && !checkpoint {
		c.r.Records++
		sec, ok := lineSecond(line)
		c.run.add(file, n, sec, ok)
		if ok && c.firstTime.IsZero() {
			c.firstTime = sec.time()
		}
	}
	c.prev, c.started = auditlog.LineHash(line), true
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
		return
	case l.Checkpoint.Head != head:
		c.r.BadCheckpoints = append(c.r.BadCheckpoints, ChainPlace{file, n, "checkpoint of another head than the line before it"})
		return
	case c.o.Key != nil && !l.Checkpoint.Verify(c.o.Key):
		c.r.BadCheckpoints = append(c.r.BadCheckpoints, ChainPlace{file, n,
			fmt.Sprintf("checkpoint signature does not verify with key %s (signed by %s)", c.r.Key, l.Checkpoint.Key)})
		return
	}
	c.r.Checkpoints++
	if c.firstTime.IsZero() {
		c.firstTime = l.Checkpoint.Time
	}
	if c.o.Key == nil {
		return // counted, but it vouches for nothing
	}
	if w := c.o.Witness; w != nil {
		if c.found == nil {
			c.found = map[string]bool{}
		}
		if !w.saw(l.Checkpoint, c.found) {
			return
		}
		c.r.Witnessed++
	}
	c.covered(l.Checkpoint, fmt.Sprintf("%s:%d", file, n))
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

// second is a time to the second, as RFC 3339 writes it in UTC
// ("2006-01-02T15:04:05"): such texts sort as their times do.
type second [len(secondLayout)]byte

const secondLayout = "2006-01-02T15:04:05"

func (s second) time() time.Time {
	t, _ := time.Parse(secondLayout, string(s[:]))
	return t
}

// lineSecond reads the time a line carries as its first field after the
// link (a record's, a fetch's), to the second: ok is false when it has
// none. Only the lines after a checkpoint need it, but which those are is
// known at the next checkpoint; parsing each line's time cost a third of
// the check, so UTC times (all the writers write) are cut, not parsed.
func lineSecond(line []byte) (s second, ok bool) {
	const at = len(`{"prev_sha256":"`) + 64 + len(`",`)
	if len(line) < at {
		return s, false
	}
	rest, ok := bytes.CutPrefix(line[at:], []byte(`"time":"`))
	if !ok {
		return s, false
	}
	i := bytes.IndexByte(rest, '"')
	if i < len(s)+1 {
		return s, false
	}
	if rest[i-1] == 'Z' && (rest[len(s)] == '.' || rest[len(s)] == 'Z') {
		copy(s[:], rest)
		return s, true
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:i]))
	if err != nil {
		return s, false
	}
	copy(s[:], t.UTC().Format(secondLayout))
	return s, true
}

// CheckFetchLogs checks the chain of each of the archive's fetch logs
// (archive.FetchLogs) as CheckChain does, each file a chain of its own
// that starts at its first line: a first line linking to another is a
// break (lines cut from its start). Fetch logs written before the chain
// have no links (Unlinked). Their checkpoints are not sent to a witness:
// o.Witness is not used.
func CheckFetchLogs(dir string, o ChainOptions) (*ChainResult, error) {
	logs, err := archive.FetchLogs(dir)
	if err != nil {
		return nil, err
	}
	o.Witness = nil
	all := &ChainResult{}
	if o.Key != nil {
		all.Key = audit.KeyFingerprint(o.Key)
	}
	for _, name := range logs {
		r, err := CheckChain([]string{name}, o)
		if err != nil {
			return nil, err
		}
		all.Lines += r.Lines
		all.Chained += r.Chained
		all.Records += r.Records
		all.Unlinked += r.Unlinked
		all.Checkpoints += r.Checkpoints
		all.Unsigned += r.Unsigned
		all.Breaks = append(all.Breaks, r.Breaks...)
		all.Torn = append(all.Torn, r.Torn...)
		all.BadCheckpoints = append(all.BadCheckpoints, r.BadCheckpoints...)
		all.Uncovered = append(all.Uncovered, r.Uncovered...)
		all.Gaps = append(all.Gaps, r.Gaps...)
		if r.Start != "" {
			all.Breaks = append(all.Breaks, ChainPlace{name, 1, "chain broken: the fetch log's first line links to a line before it (lines cut from its start)"})
		}
	}
	return all, nil
}
