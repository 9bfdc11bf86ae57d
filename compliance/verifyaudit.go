package compliance

import (
	"errors"
	"os"
	"runtime"
	"sync"

	"github.com/robotsgate/robotsgate/audit"
)

// batchLines is how many audit lines travel together between the reader,
// the workers and the caller of VerifyAudit.
const batchLines = 512

// batch is a run of consecutive lines of one audit file, then their
// records and verifications.
type batch struct {
	file  string
	buf   []byte // the lines, one after the other
	ends  []int  // where each line ends in buf
	lines []int  // each line's number in its file
	err   error  // reading failed after these lines (the file's error)

	recs []audit.Record
	vs   []Verification
	// skip is why a line is not a record (too long: set by the reader;
	// not JSON: by the decoder), nil for a record.
	skip []error
	done chan struct{}
}

func (b *batch) reset(file string) {
	b.file, b.buf, b.ends, b.lines, b.skip, b.err = file, b.buf[:0], b.ends[:0], b.lines[:0], b.skip[:0], nil
	b.done = make(chan struct{})
}

// VerifyAudit verifies every record of the audit files with b
// (Bodies.Verify) and calls fn with each record, its file and line, and
// what its verification found, in the order of the files and their lines,
// from one goroutine at a time, and skip for each line that is not a
// record, in its place. It is ReadAudit and Verify with the JSON
// decoding and the replays spread over workers goroutines (GOMAXPROCS
// when workers <= 0): decoding dominates. rec is valid only during the
// call. A file that cannot be read is an error naming it, after fn has
// seen the records before it; so is an error fn returns (reading stops).
// Memory: a few batches of lines per worker, and b's parsed bodies.
func VerifyAudit(files []string, b *Bodies, workers int, fn func(rec *audit.Record, file string, line int, v Verification) error, skip SkipFunc) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers == 1 { // nothing to share: no hand-offs
		return ReadAudit(files, func(rec *audit.Record, file string, line int) error {
			return fn(rec, file, line, b.Verify(rec))
		}, skip)
	}
	quit := make(chan struct{})
	work := make(chan *batch, workers)
	order := make(chan *batch, 2*workers)
	free := make(chan *batch, 3*workers+2)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for bt := range work {
				bt.verify(b)
				close(bt.done)
			}
		}()
	}
	go func() {
		defer close(order)
		defer close(work)
		readBatches(files, free, quit, func(bt *batch) bool {
			select {
			case order <- bt:
			case <-quit:
				return false
			}
			if bt.err != nil && len(bt.ends) == 0 {
				close(bt.done) // nothing to decode
				return true
			}
			select {
			case work <- bt:
				return true
			case <-quit:
				close(bt.done)
				return false
			}
		})
	}()
	err := consume(order, free, fn, skip)
	close(quit)
	for range order { // let the reader finish
	}
	wg.Wait()
	return err
}

// readBatches cuts the files into batches and hands each to send, which
// returns false to stop.
func readBatches(files []string, free chan *batch, quit chan struct{}, send func(*batch) bool) {
	get := func(file string) *batch {
		var bt *batch
		select {
		case bt = <-free:
		default:
			bt = &batch{}
		}
		bt.reset(file)
		return bt
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			bt := get(name)
			bt.err = err
			send(bt)
			return
		}
		bt := get(name)
		stopped := false
		add := func(n int, line []byte, skip error) error {
			bt.buf = append(bt.buf, line...)
			bt.ends = append(bt.ends, len(bt.buf))
			bt.lines = append(bt.lines, n)
			bt.skip = append(bt.skip, skip)
			if len(bt.ends) == batchLines {
				if !send(bt) {
					stopped = true
					return errStopped
				}
				bt = get(name)
			}
			return nil
		}
		err = eachLine(f, func(n int, line []byte) error { return add(n, line, nil) },
			func(n int, err error) { add(n, nil, err) }, name)
		f.Close()
		if stopped {
			return
		}
		if err != nil {
			bt.err = err
			send(bt)
			return
		}
		if len(bt.ends) > 0 && !send(bt) {
			return
		}
		select {
		case <-quit:
			return
		default:
		}
	}
}

// errCheckpoint marks a checkpoint line, which is no decision and is not
// passed on (CheckChain reads checkpoints).
var errCheckpoint = errors.New("a checkpoint")

// errStopped ends the reading of a file whose batch was not taken.
var errStopped = errors.New("stopped")

// verify decodes and verifies the batch's lines; a line that is not a
// record is marked to be skipped.
func (bt *batch) verify(b *Bodies) {
	n := len(bt.ends)
	if cap(bt.recs) < n {
		bt.recs, bt.vs = make([]audit.Record, n), make([]Verification, n)
	}
	bt.recs, bt.vs = bt.recs[:n], bt.vs[:n]
	start := 0
	for i, end := range bt.ends {
		rec := &bt.recs[i]
		*rec = audit.Record{}
		line := bt.buf[start:end]
		start = end
		if bt.skip[i] != nil {
			continue
		}
		if err := decodeRecord(line, rec); err != nil {
			bt.skip[i] = err
			continue
		}
		if rec.Checkpoint != nil {
			bt.skip[i] = errCheckpoint
			continue
		}
		bt.vs[i] = b.Verify(rec)
	}
}

// consume calls fn for the batches' records in order.
func consume(order, free chan *batch, fn func(*audit.Record, string, int, Verification) error, skip SkipFunc) error {
	for bt := range order {
		<-bt.done
		for i := range bt.ends {
			if bt.skip[i] == errCheckpoint {
				continue
			}
			if bt.skip[i] != nil {
				skip(bt.file, bt.lines[i], bt.skip[i])
				continue
			}
			if err := fn(&bt.recs[i], bt.file, bt.lines[i], bt.vs[i]); err != nil {
				return err
			}
		}
		if bt.err != nil {
			return bt.err
		}
		select {
		case free <- bt:
		default:
		}
	}
	return nil
}
