package report

import (
	"container/heap"
	"errors"
	"sync"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/compliance"
)

// readMerged calls fn for every record of the audit files, and skip (from
// several goroutines) for every line that is not one, each read once
// (compliance.ReadAudit), merged into the order they were written: by the
// time each request ended (its arrival plus duration_ms), which is the
// order within one file. Files that overlap in time (several proxies
// sharing a pacing store, each with its log) come out interleaved, as
// rotated files of one log come out one after the other. Memory: one
// reader and a few records per file.
func readMerged(files []string, fn func(*audit.Record) error, skip compliance.SkipFunc) error {
	if len(files) == 1 {
		return compliance.ReadAudit(files, func(r *audit.Record, _ string, _ int) error { return fn(r) }, skip)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(done)
		wg.Wait()
	}()
	chans := make([]chan audit.Record, len(files))
	errs := make([]error, len(files))
	for i, name := range files {
		ch := make(chan audit.Record, 64)
		chans[i] = ch
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(ch)
			errs[i] = compliance.ReadAudit([]string{name}, func(r *audit.Record, _ string, _ int) error {
				select {
				case ch <- *r:
					return nil
				case <-done:
					return errStopped
				}
			}, skip)
		}()
	}
	h := make(recordHeap, 0, len(files))
	next := func(src int) error {
		rec, ok := <-chans[src]
		if !ok {
			return errs[src] // set before the channel closed
		}
		heap.Push(&h, queued{rec: rec, end: ended(&rec), src: src})
		return nil
	}
	for i := range chans {
		if err := next(i); err != nil {
			return err
		}
	}
	for h.Len() > 0 {
		q := heap.Pop(&h).(queued)
		if err := fn(&q.rec); err != nil {
			return err
		}
		if err := next(q.src); err != nil {
			return err
		}
	}
	return nil
}

var errStopped = errors.New("report: reading stopped")

// ended is when the record's request ended, when it was logged.
func ended(r *audit.Record) time.Time {
	return r.Time.Add(time.Duration(r.DurationMS * float64(time.Millisecond)))
}

type queued struct {
	rec audit.Record
	end time.Time
	src int
}

// recordHeap orders records by end, then by file.
type recordHeap []queued

func (h recordHeap) Len() int { return len(h) }
func (h recordHeap) Less(i, j int) bool {
	if !h[i].end.Equal(h[j].end) {
		return h[i].end.Before(h[j].end)
	}
	return h[i].src < h[j].src
}
func (h recordHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *recordHeap) Push(x any)   { *h = append(*h, x.(queued)) }
func (h *recordHeap) Pop() any {
	old := *h
	q := old[len(old)-1]
	*h = old[:len(old)-1]
	return q
}
