package auditlog

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/robotsgate/robotsgate/audit"
)

// The records of every request go through one goroutine that writes them
// (group commit): Write encodes a record into the batch being filled and
// returns; the writing goroutine takes the whole batch, chains its lines
// and writes them with one write(2), while the next batch fills. Under
// load a write carries the records of many requests, so the audit log
// costs a request its encoding and a share of a write instead of a
// write(2) of its own; a request never waits for the disk, unless
// Options.MaxQueue bytes are waiting already.

// errClosed is a Write after Close.
var errClosed = errors.New("audit log: closed")

// batch is records handed over: their lines (each after its empty
// prev_sha256, newline included) one after another, ends[i] the end of
// the i-th.
type batch struct {
	lines []byte
	ends  []int
}

func (b *batch) start(i int) int {
	if i == 0 {
		return 0
	}
	return b.ends[i-1]
}

func (b *batch) reset() {
	b.lines, b.ends = b.lines[:0], b.ends[:0]
}

// lostRecords is a failure of a batch's write and the records it lost.
type lostRecords struct {
	err  error
	lost int
}

// queue hands records from the requests' goroutines to the writing one.
type queue struct {
	mu sync.Mutex
	// filling is the batch Write appends to; spare the one the writer
	// gave back (swapped, so that neither is allocated again).
	filling, spare *batch
	// room wakes Writes waiting for MaxQueue; written wakes Flush.
	room, written sync.Cond
	// handed counts the records handed over, done those the writer has
	// finished with (written, or lost and reported).
	handed, done uint64
	closed       bool
	wake         chan struct{} // the writer has a batch to take
	stopped      chan struct{} // the writer has returned
	max          int
}

func (q *queue) start(a *Writer) {
	q.filling, q.spare = &batch{}, &batch{}
	q.room.L, q.written.L = &q.mu, &q.mu
	q.wake, q.stopped = make(chan struct{}, 1), make(chan struct{})
	q.max = a.opts.MaxQueue
	go q.run(a)
}

// encodeBufs lends put its encoding buffers: a record is encoded outside
// the queue's lock, then copied into the batch.
var encodeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// put encodes r and appends it to the batch being filled.
func (q *queue) put(r *audit.Record) error {
	bp := encodeBufs.Get().(*[]byte)
	defer encodeBufs.Put(bp)
	line, err := appendRecord((*bp)[:0], r)
	*bp = line[:0]
	if err != nil || !bytes.HasPrefix(line, prevPrefix) {
		return fmt.Errorf("audit log: encoding a record: %v", err)
	}
	rest := line[len(prevPrefix):] // the writer fills prev_sha256 in
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.filling.lines) >= q.max && !q.closed {
		q.room.Wait()
	}
	if q.closed {
		return errClosed
	}
	b := q.filling
	b.lines = append(append(b.lines, rest...), '\n')
	b.ends = append(b.ends, len(b.lines))
	q.handed++
	select {
	case q.wake <- struct{}{}:
	default: // the writer is woken already
	}
	return nil
}

// run writes batch after batch until the queue is closed and empty.
func (q *queue) run(a *Writer) {
	defer close(q.stopped)
	for range q.wake {
		for q.writeNext(a) {
		}
	}
}

// writeNext takes the batch filled so far and writes it; false when it
// was empty.
func (q *queue) writeNext(a *Writer) bool {
	q.mu.Lock()
	b := q.filling
	if len(b.ends) == 0 {
		q.mu.Unlock()
		return false
	}
	q.filling, q.spare = q.spare, nil
	q.room.Broadcast()
	q.mu.Unlock()

	a.mu.Lock()
	lost := a.writeBatch(b)
	a.mu.Unlock()
	a.report(lost)

	q.mu.Lock()
	q.done += uint64(len(b.ends))
	b.reset()
	q.spare = b
	q.written.Broadcast()
	q.mu.Unlock()
	return true
}

// report makes a batch's failures known (Failing, Failures, OnError), or
// clears Failing when the batch was written.
func (a *Writer) report(lost []lostRecords) {
	if len(lost) == 0 {
		a.failed.Store(nil)
		return
	}
	for _, l := range lost {
		a.fail(l.err, l.lost)
		if a.opts.OnError != nil {
			a.opts.OnError(l.err, l.lost)
		}
	}
}

// Flush returns once every record handed over before it is written (or
// lost, which Failing then says).
func (a *Writer) Flush() error {
	if a == nil {
		return nil
	}
	q := &a.q
	q.mu.Lock()
	for target := q.handed; q.done < target; {
		q.written.Wait()
	}
	q.mu.Unlock()
	return a.Failing()
}

// close refuses further records and returns once those handed over are
// written and the writer has stopped.
func (q *queue) close() {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		<-q.stopped
		return
	}
	q.closed = true
	q.room.Broadcast()
	close(q.wake) // under the lock: no put sends on it after
	q.mu.Unlock()
	<-q.stopped
}
