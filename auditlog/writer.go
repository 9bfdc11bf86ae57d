// Package auditlog writes the audit log: the writer that appends one
// record (package audit) per line, the hash chain that links each line to
// the one before it, the signed checkpoints of the chain's head and the
// evidence key that signs them. Other chained logs (the archive's fetch
// logs) chain and sign their lines with it too, and the evidence commands
// check the chain with its LineHash.
//
// It imports no other robotsgate package but audit: the offline readers
// that check a chain must not pull in the proxy's dependencies.
package auditlog

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robotsgate/robotsgate/audit"
)

// Options are how a Writer chains and signs the log.
type Options struct {
	// Key signs the checkpoints; nil writes none (the chain stays).
	Key ed25519.PrivateKey
	// CheckpointEvery and CheckpointRecords: a checkpoint is written when
	// the log is opened, before the first record written this long or
	// longer after the last checkpoint (by the wall clock, as records'
	// times are), after the record that makes this many since it, and on
	// Close. Each checkpoint states the interval
	// (audit.Checkpoint.Interval), so that a verifier knows how many lines
	// may follow the last one. Zero values mean one minute and 10,000
	// records.
	CheckpointEvery   time.Duration
	CheckpointRecords int64
	// OnCheckpoint, when set, hears of each checkpoint written (a witness
	// sends its head away). It is called with the writer's lock held: it
	// must not block.
	OnCheckpoint func(audit.Checkpoint)
	// OnError, when set, hears of every failure to write: err, and how
	// many records it lost (0 when only a checkpoint or the head file
	// failed). It is called by the goroutine that writes, with no lock
	// held; Write has long returned for those records.
	OnError func(err error, lost int)
	// Sync makes the writer fsync the file after each batch it writes, so
	// that a record written survives a machine's crash too, at the cost
	// of a disk flush per batch. Off, the operating system writes the
	// page cache back when it will (what a crash of the machine can lose:
	// docs/operations.md).
	Sync bool
	// MaxQueue bounds, in bytes, the records handed over to the writing
	// goroutine and not yet written; a Write beyond it waits for room.
	// Zero means 4 MiB.
	MaxQueue int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Writer writes records (audit.Record) as JSON lines, each chained to the
// line before it (Record.Prev) and now and then a signed checkpoint
// (audit.Checkpoint), to a file (reopened on demand, for logrotate: the
// chain goes on in the new file) or to standard output. A nil *Writer
// writes nothing. It is safe for concurrent use.
//
// Write encodes a record on the caller's goroutine and hands it over; one
// goroutine of the Writer chains the records handed over and writes them
// in batches, a write(2) for all that arrived while it wrote the last
// (queue.go). A request does not wait for its record: what a process
// crash can lose is what was handed over and not yet written, at most
// MaxQueue bytes and in practice the records of the last millisecond;
// Flush and Close write everything handed over before them.
//
// A record is written whole or not at all: a write that fails part-way
// (a full disk) is cut back off the file, so the next record starts on a
// line of its own and no reader meets a torn line. A file found ending
// in a torn line (a crash) gets a newline first: the torn line stays, for
// a reader to report, and the chain goes on through it.
type Writer struct {
	q queue // the records handed over (queue.go)

	// mu guards the file and the chain below; the writing goroutine holds
	// it while it writes a batch.
	mu   sync.Mutex
	path string
	w    io.Writer
	f    *os.File // nil for stdout
	opts Options
	// good is the file's length after the last whole line; torn: the
	// file is longer than good and must be cut back before the next write.
	good int64
	torn bool
	// head is the hash of the last line written (the chain's head);
	// records counts the records written, since the records since the
	// last checkpoint, at when it was written.
	head           string
	records, since int64
	// written, recordsWritten and sinceWritten are head, records and
	// since as of the last line written to the file: a failed write
	// takes the chain back to them.
	written                      string
	recordsWritten, sinceWritten int64
	// out is the batch being written, reused.
	out          []byte
	checkpointAt time.Time
	// started: the checkpoint of the log as opened is written (with a
	// key); until it is, every Write tries it first.
	started bool
	// failed is the last write's error, nil once a write succeeds.
	failed   atomic.Pointer[error]
	failures atomic.Int64
}

// Open opens the audit log at path for appending, creating it with mode
// 0640 (and its directory, 0750): "" disables it (a nil Writer), "-" is standard output. The chain
// goes on from the file's last line or, for an empty file, from the head
// kept beside it (path + ".head", written at each checkpoint and on
// Close) when a rotated file held the lines before.
func Open(path string, opts Options) (*Writer, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CheckpointEvery <= 0 {
		opts.CheckpointEvery = time.Minute
	}
	if opts.CheckpointRecords <= 0 {
		opts.CheckpointRecords = 10000
	}
	if opts.MaxQueue <= 0 {
		opts.MaxQueue = 4 << 20
	}
	switch path {
	case "":
		return nil, nil
	case "-":
		a := &Writer{path: path, w: os.Stdout, opts: opts}
		a.start()
		a.q.start(a)
		return a, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	a := &Writer{path: path, opts: opts}
	if data, err := os.ReadFile(path + ".head"); err == nil {
		a.head = strings.TrimSpace(string(data))
		a.written = a.head
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	if err := a.Reopen(); err != nil {
		return nil, err
	}
	a.start()
	a.q.start(a)
	return a, nil
}

// start writes the checkpoint of the log as opened, when there is a key:
// it covers what an earlier process left after its last checkpoint (a
// crash), and bounds what this one leaves. A failure is reported as a
// failed write would be (Failing), and the next Write tries again.
func (a *Writer) start() {
	if a.opts.Key == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.checkpoint(a.opts.Now().Round(0)); err != nil {
		a.fail(err, 0)
	}
}

// Reopen closes and reopens the file, so a rotated log continues in a new
// file, the chain with it. It does nothing for standard output or a nil
// Writer. It holds the writer's lock from reading the file's last line to
// taking the new file: a batch written in between would otherwise be
// left out of the chain's head.
func (a *Writer) Reopen() error {
	if a == nil || a.path == "-" {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.OpenFile(a.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	size, last, err := endLine(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("audit log %s: %w", a.path, err)
	}
	if a.f != nil {
		a.f.Close()
	}
	a.f, a.w, a.good, a.torn = f, f, size, false
	if last != nil {
		a.head = LineHash(last)
		a.written = a.head
	}
	return nil
}

// maxLastLine bounds how far back Reopen looks for the file's last line
// (a line the writer writes is far shorter: audit.Record.Cap).
const maxLastLine = 1 << 20

// endLine makes an opened file end with a newline (or be empty) and
// returns its length and its last line (nil for an empty file).
func endLine(f *os.File) (int64, []byte, error) {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 || !st.Mode().IsRegular() {
		return 0, nil, err
	}
	size := st.Size()
	n := min(size, maxLastLine+1)
	tail := make([]byte, n)
	if _, err := f.ReadAt(tail, size-n); err != nil && err != io.EOF {
		return 0, nil, err
	}
	if tail[len(tail)-1] != '\n' {
		if _, err := f.Write([]byte{'\n'}); err != nil {
			return 0, nil, fmt.Errorf("ending its torn last line: %w", err)
		}
		size++
		tail = append(tail, '\n')
	}
	line := tail[:len(tail)-1]
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	return size, line, nil
}

// prevPrefix is how every line begins: Record.Prev is its first field,
// written empty by the encoder and filled in when the line is chained.
var prevPrefix = []byte(`{"prev_sha256":""`)

// Write caps r (Record.Cap), encodes it and hands it over to be appended
// as one line chained to the line before it; a checkpoint follows when
// one is due. It returns once the record is handed over, which waits only
// when MaxQueue bytes are waiting already. The error is an encoding's, or
// a Writer closed: a failure to write the file comes later, to
// Options.OnError, Failing and Failures.
func (a *Writer) Write(r *audit.Record) error {
	if a == nil {
		return nil
	}
	r.Cap()
	r.Prev = ""
	return a.q.put(r)
}

// writeBatch chains and writes the records of b (their lines without the
// empty prev_sha256 they were encoded with), the checkpoints due among
// them included, in as few writes as the checkpoints allow. Called by the
// writing goroutine with a.mu held; it returns the errors to report and
// the records each lost.
func (a *Writer) writeBatch(b *batch) []lostRecords {
	var lost []lostRecords
	a.out = a.out[:0]
	pending := 0 // records in a.out
	flush := func() {
		if err := a.writeOut(); err != nil {
			lost = append(lost, lostRecords{err, pending})
		}
		pending = 0
	}
	for i, end := range b.ends {
		rest := b.lines[b.start(i):end]
		// The wall clock, as the records' times: a record that arrived
		// CheckpointEvery after the last checkpoint is always after
		// another.
		now := a.opts.Now().Round(0)
		if a.opts.Key != nil && (!a.started || now.Sub(a.checkpointAt) >= a.opts.CheckpointEvery) {
			flush()
			if err := a.checkpoint(now); err != nil {
				lost = append(lost, lostRecords{err, 1}) // the record would break the interval promised
				continue
			}
		}
		a.appendLine(rest)
		pending++
		a.records++
		a.since++
		if a.opts.Key != nil && a.since >= a.opts.CheckpointRecords {
			flush()
			if err := a.checkpoint(now); err != nil {
				lost = append(lost, lostRecords{err, 0})
			}
		}
	}
	flush()
	return lost
}

// appendLine appends `{"prev_sha256":"HEAD"` and rest (a line after its
// empty prev_sha256, newline included) to the batch being written, and
// moves the head to it.
func (a *Writer) appendLine(rest []byte) {
	start := len(a.out)
	a.out = append(append(append(a.out, `{"prev_sha256":"`...), a.head...), '"')
	a.out = append(a.out, rest...)
	a.head = LineHash(a.out[start : len(a.out)-1])
}

// writeOut writes the batch's lines, in one write, cut back off the file
// when the write fails part-way (a full disk) so that no torn line stays;
// the chain's head and counts go back to the last line written. Called
// with a.mu held.
func (a *Writer) writeOut() error {
	if len(a.out) == 0 {
		return nil
	}
	defer func() { a.out = a.out[:0] }()
	if a.torn {
		if err := a.f.Truncate(a.good); err != nil {
			a.unwind()
			return fmt.Errorf("audit log: cutting a torn record: %w", err)
		}
		a.torn = false
	}
	n, err := a.w.Write(a.out)
	if err == nil && a.opts.Sync && a.f != nil {
		err = a.f.Sync()
	}
	if err != nil {
		if a.f != nil && n > 0 {
			// Cut the part written off now; if that fails too, before
			// the next write.
			a.torn = a.f.Truncate(a.good) != nil
		}
		a.unwind()
		return fmt.Errorf("audit log: %w", err)
	}
	a.good += int64(n)
	a.written = a.head
	a.recordsWritten, a.sinceWritten = a.records, a.since
	return nil
}

// unwind takes the chain back to the last line written: the lines of a
// failed write are not in the log.
func (a *Writer) unwind() {
	a.head, a.records, a.since = a.written, a.recordsWritten, a.sinceWritten
}

// writeLine writes one line (a checkpoint's: `{"prev_sha256":"HEAD"` and
// rest, the line after its empty prev_sha256) and moves the head to it.
// Called with a.mu held.
func (a *Writer) writeLine(rest []byte) error {
	a.appendLine(append(rest, '\n'))
	return a.writeOut()
}

// checkpoint writes a signed checkpoint of the head and keeps the head
// beside the file. Called with a.mu held.
func (a *Writer) checkpoint(now time.Time) error {
	c, body, err := newCheckpoint(a.opts.Key, a.head, a.records, now,
		audit.Interval{Records: a.opts.CheckpointRecords, Every: a.opts.CheckpointEvery})
	if err != nil {
		return fmt.Errorf("audit log: encoding a checkpoint: %w", err)
	}
	if err := a.writeLine(append([]byte{','}, body[1:]...)); err != nil {
		return err
	}
	a.since, a.checkpointAt, a.started = 0, now, true
	if a.opts.OnCheckpoint != nil {
		a.opts.OnCheckpoint(*c)
	}
	return a.saveHead()
}

// saveHead keeps the head beside the file, for a process that starts on
// an empty file after a rotation. Called with a.mu held.
func (a *Writer) saveHead() error {
	if a.f == nil {
		return nil
	}
	tmp := a.path + ".head.tmp"
	if err := os.WriteFile(tmp, []byte(a.head+"\n"), 0o640); err != nil {
		return fmt.Errorf("audit log: keeping the chain's head: %w", err)
	}
	if err := os.Rename(tmp, a.path+".head"); err != nil {
		return fmt.Errorf("audit log: keeping the chain's head: %w", err)
	}
	return nil
}

// fail records a failure that lost lost records.
func (a *Writer) fail(err error, lost int) error {
	a.failures.Add(int64(lost))
	a.failed.Store(&err)
	return err
}

// Failing returns why the last record could not be written, nil when the
// last write succeeded (or none was made).
func (a *Writer) Failing() error {
	if a == nil {
		return nil
	}
	if p := a.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Failures counts the records not written since Open.
func (a *Writer) Failures() int64 {
	if a == nil {
		return 0
	}
	return a.failures.Load()
}

// Close writes what was handed over, then a last checkpoint when records
// were written since the last one, keeps the chain's head beside the file
// and closes it. A Write after Close is refused.
func (a *Writer) Close() error {
	if a == nil {
		return nil
	}
	a.q.close()
	if a.f == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var err error
	if a.opts.Key != nil && a.since > 0 {
		err = a.checkpoint(a.opts.Now().Round(0))
	} else {
		err = a.saveHead()
	}
	return errors.Join(err, a.f.Close())
}
