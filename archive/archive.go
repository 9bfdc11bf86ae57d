// Package archive keeps the evidence behind robotsgate's decisions: every
// distinct robots.txt body the proxy judged, stored once under its
// SHA-256, and a log of every robots.txt fetch (one JSON line each). With
// the audit log's robots_sha256, every decision can be replayed against
// the very bytes that made it (robotsgate verify) and reported on
// (robotsgate report).
//
// Layout under the archive directory:
//
//	bodies/ab/abcdef….txt     a body, named by its SHA-256 in hex
//	fetches/HOST-PID-START.jsonl  one process's fetch log (Fetch per line)
//
// Several processes may share a directory: bodies are written to a
// temporary file and renamed into place (the same bytes under the same
// name), and each process appends to a fetch log of its own. The archive
// grows by distinct bodies only, plus one log line per fetch.
//
// Writer never blocks its caller: records go through a bounded queue to
// one goroutine, and a record that finds the queue full, or a disk that
// fails, is dropped and counted (Dropped), never a reason to refuse or
// allow a request. It must not decide anything, nor change or delete a
// body once stored.
package archive

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/auditlog"
)

// Fetch is one robots.txt fetch, a line of the fetch log. Field names are
// a stable interface.
type Fetch struct {
	Time      time.Time `json:"time"`       // when the answer arrived (RFC 3339, UTC)
	Origin    string    `json:"origin"`     // scheme://host[:port]
	RobotsURL string    `json:"robots_url"` // what was asked for
	FinalURL  string    `json:"final_url"`  // where the answer came from, after redirects
	// HTTPStatus is the status of the final answer, 0 when there was none
	// (a network failure); 304 for a revalidation that kept the body.
	HTTPStatus int `json:"http_status"`
	// Outcome is the resolver's verdict: ok, unavailable, unreachable.
	Outcome string `json:"outcome"`
	// Cause says why a fetch gave no file (dns_error, http_5xx, ...).
	Cause        string `json:"cause,omitempty"`
	CacheControl string `json:"cache_control,omitempty"`
	Expires      string `json:"expires,omitempty"`
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
	Date         string `json:"date,omitempty"`
	ContentType  string `json:"content_type,omitempty"`
	// SHA256 names the body judged (for a 304, the body kept), "" when
	// none was; Size is its length and Truncated whether the answer was
	// longer than the 500 KiB judged.
	SHA256    string `json:"sha256,omitempty"`
	Size      int    `json:"size"`
	Truncated bool   `json:"truncated"`
	// From is "shared-store" when the answer came from another instance
	// through the shared (Redis) store rather than from a fetch; "" for a
	// fetch.
	From string `json:"from,omitempty"`
}

// Sum returns the hex SHA-256 of body, as the archive names it.
func Sum(body []byte) string {
	h := sha256.Sum256(body)
	return hex.EncodeToString(h[:])
}

// ValidSum reports whether sum names a body as Sum does: 64 lower-case hex
// digits. A name read from an audit log is checked before it is used as a
// path.
func ValidSum(sum string) bool {
	if len(sum) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(sum); i++ {
		if c := sum[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// BodyPath returns where dir keeps the body named sum.
func BodyPath(dir, sum string) string {
	if len(sum) < 2 {
		return filepath.Join(dir, "bodies", sum+".txt")
	}
	return filepath.Join(dir, "bodies", sum[:2], sum+".txt")
}

// ReadBody returns the body named sum, checking that it still has that
// SHA-256 (fs.ErrNotExist when dir does not have it).
func ReadBody(dir, sum string) ([]byte, error) {
	if !ValidSum(sum) {
		return nil, fmt.Errorf("archive: %.80q is not a SHA-256 (64 lower-case hex digits)", sum)
	}
	b, err := os.ReadFile(BodyPath(dir, sum))
	if err != nil {
		return nil, err
	}
	if Sum(b) != sum {
		return nil, fmt.Errorf("archive: %s: the body does not match its SHA-256", BodyPath(dir, sum))
	}
	return b, nil
}

// FetchLogs returns the fetch logs in dir, sorted by name.
func FetchLogs(dir string) ([]string, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "fetches", "*.jsonl"))
	if err != nil {
		return nil, err
	}
	return logs, nil
}

// record is what the writer goroutine stores.
type record struct {
	fetch Fetch
	body  []byte // nil when the body is already stored or there is none
}

// Writer stores bodies and fetch lines of one process. Create it with
// Open; it is safe for concurrent use.
type Writer struct {
	dir     string
	queue   chan record
	done    chan struct{}
	closing sync.Once
	dropped atomic.Uint64
	stored  sync.Map // sums this process has stored or found, to skip rewrites
	onError func(error)
	log     *os.File
	// The fetch log is a hash chain, as the audit log is (auditlog.ChainLine),
	// with checkpoints signed by key (nil: none) at the interval
	// checkpointInterval, as the audit log's: when it is opened, before a
	// line written checkpointInterval.Every after the last, after
	// checkpointInterval.Records lines, and on Close. Used by the writing
	// goroutine only (and Open and Close, before and after it).
	key          ed25519.PrivateKey
	head         string
	since        int64
	lines        int64
	good         int64 // the fetch log's length after its last whole line
	checkpointAt time.Time
}

// checkpointInterval is how often the fetch log is signed; each
// checkpoint states it (audit.Checkpoint.Interval).
var checkpointInterval = audit.Interval{Records: 1000, Every: time.Minute}

// queueSize bounds the records waiting to be written.
const queueSize = 1024

// Open creates dir's layout if needed and a fetch log of this process,
// chained line to line and signed with key (nil: not signed); onError (may
// be nil) hears of every write that failed.
func Open(dir string, key ed25519.PrivateKey, onError func(error)) (*Writer, error) {
	for _, sub := range []string{"bodies", "fetches"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("archive: %w", err)
		}
	}
	host, _ := os.Hostname()
	host = strings.NewReplacer("/", "_", string(filepath.Separator), "_").Replace(host)
	name := fmt.Sprintf("%s-%d-%s.jsonl", host, os.Getpid(), time.Now().UTC().Format("20060102T150405.000000000Z"))
	f, err := os.OpenFile(filepath.Join(dir, "fetches", name), os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o640) // clients are not in it, but the hosts a client asked for are
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	if onError == nil {
		onError = func(error) {}
	}
	w := &Writer{dir: dir, queue: make(chan record, queueSize), done: make(chan struct{}), onError: onError, log: f, key: key}
	if key != nil {
		// The log starts signed, so that a verifier can bound the lines
		// that follow the last checkpoint even when no other was written.
		if err := w.checkpoint(time.Now().Round(0)); err != nil {
			f.Close()
			return nil, err
		}
	}
	go w.run()
	return w, nil
}

// Record queues a fetch and the body it judged (nil when none) for
// writing; it never blocks. It returns false when the record was dropped
// (the queue is full or the writer closed).
func (w *Writer) Record(f Fetch, body []byte) bool {
	if f.SHA256 != "" {
		if _, ok := w.stored.Load(f.SHA256); ok {
			body = nil // stored already: only the log line
		}
	}
	select {
	case <-w.done:
		w.dropped.Add(1)
		return false
	default:
	}
	select {
	case w.queue <- record{fetch: f, body: body}:
		return true
	default:
		w.dropped.Add(1)
		w.onError(errors.New("archive: queue full, a fetch record was dropped"))
		return false
	}
}

// Dropped returns how many records could not be written.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Close writes what is queued, and a checkpoint of what it wrote, and
// closes the fetch log.
func (w *Writer) Close() error {
	w.closing.Do(func() { close(w.queue) })
	<-w.done
	var err error
	if w.since > 0 {
		err = w.checkpoint(time.Now().Round(0))
	}
	return errors.Join(err, w.log.Close())
}

func (w *Writer) run() {
	defer close(w.done)
	for r := range w.queue {
		if err := w.write(r); err != nil {
			w.dropped.Add(1)
			w.onError(err)
		}
	}
}

func (w *Writer) write(r record) error {
	if r.body != nil && r.fetch.SHA256 != "" {
		if err := w.storeBody(r.fetch.SHA256, r.body); err != nil {
			return err
		}
	}
	obj, err := json.Marshal(r.fetch)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	now := time.Now().Round(0) // the wall clock, as the lines' times
	if w.key != nil && now.Sub(w.checkpointAt) >= checkpointInterval.Every {
		if err := w.checkpoint(now); err != nil {
			return err
		}
	}
	if err := w.writeLine(obj); err != nil {
		return err
	}
	w.lines++
	if w.since++; w.since >= checkpointInterval.Records {
		return w.checkpoint(now)
	}
	return nil
}

// writeLine appends obj chained to the line before it. A write that
// fails part-way (a full disk) is cut back off, so that the next line
// starts on a line of its own and links to the last whole one.
func (w *Writer) writeLine(obj []byte) error {
	line := auditlog.ChainLine(w.head, obj)
	n, err := w.log.Write(line)
	if err != nil {
		if n > 0 {
			err = errors.Join(err, w.log.Truncate(w.good))
		}
		return fmt.Errorf("archive: fetch log: %w", err)
	}
	w.good += int64(n)
	w.head = auditlog.LineHash(line[:len(line)-1])
	return nil
}

// checkpoint signs the head, when there is a key, and keeps the head
// beside the fetch log (saveHead).
func (w *Writer) checkpoint(now time.Time) error {
	w.since = 0
	if w.key != nil {
		obj, err := auditlog.CheckpointObject(w.key, w.head, w.lines, now, checkpointInterval)
		if err != nil {
			return fmt.Errorf("archive: fetch log checkpoint: %w", err)
		}
		if err := w.writeLine(obj); err != nil {
			return err
		}
		w.checkpointAt = now
	}
	if err := w.saveHead(); err != nil {
		w.onError(err) // the lines are written; only the evidence of their end is not
	}
	return nil
}

// saveHead keeps the hash of the fetch log's last line in a file beside it
// (its name + ".head", as the audit log's), replaced whole: a reader that
// finds the log ending before that line knows lines were cut from its end,
// the final checkpoint of a clean stop included.
func (w *Writer) saveHead() error {
	path := w.log.Name() + ".head"
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(w.head+"\n"), 0o640); err != nil {
		return fmt.Errorf("archive: keeping the fetch log's head: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("archive: keeping the fetch log's head: %w", err)
	}
	return nil
}

// storeBody writes body under sum unless it is there: a temporary file in
// the same directory, renamed into place, so a reader (or another
// process) never sees a partial body.
func (w *Writer) storeBody(sum string, body []byte) error {
	path := BodyPath(w.dir, sum)
	if _, err := os.Stat(path); err == nil {
		w.stored.Store(sum, struct{}{})
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("archive: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	_, err = tmp.Write(body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("archive: body %s: %w", sum, err)
	}
	w.stored.Store(sum, struct{}{})
	return nil
}
