package auditlog

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/robotsgate/robotsgate/audit"
)

// A request hands its record over without waiting for the disk, unless
// the batch filling holds MaxQueue bytes already (4 MiB unless set): then
// it waits for room, so a stalled disk bounds what a crash can lose to
// the batch being written and the one filling. The log here is a FIFO no
// one reads: the writer stalls once the pipe is full.
func TestHandingOverWaitsForRoom(t *testing.T) {
	dir := t.TempDir()
	if w, err := Open(filepath.Join(dir, "default.log"), Options{}); err != nil || w.opts.MaxQueue != 4<<20 {
		t.Fatalf("the default MaxQueue: %v (%v), want 4 MiB", w.opts.MaxQueue, err)
	} else {
		w.Close()
	}
	path := filepath.Join(dir, "stalled.log")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	const maxQueue, records = 16 << 10, 20_000
	w, err := Open(path, Options{MaxQueue: maxQueue})
	if err != nil {
		t.Fatal(err)
	}
	rec := &audit.Record{URL: "http://a.example/" + strings.Repeat("x", 200), Decision: audit.Allow}
	line, _ := appendRecord(nil, rec)
	var handed atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range records {
			if err := w.Write(rec); err != nil {
				t.Error(err)
				return
			}
			handed.Add(1)
		}
	}()
	// Wait until the hand-overs stop (bounded): the pipe is full, the
	// writer stalled in write(2) and the filling batch full.
	for last, still, start := int64(-1), 0, time.Now(); still < 20 && time.Since(start) < 20*time.Second; {
		time.Sleep(10 * time.Millisecond)
		if n := handed.Load(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	pipe, err := unix.FcntlInt(uintptr(w.f.Fd()), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	// In the pipe, in the batch being written and in the one filling
	// (each may pass MaxQueue by the record that filled it).
	bound := int64(pipe+2*(maxQueue+len(line))) / int64(len(line))
	if n := handed.Load(); n >= records || n > bound {
		t.Errorf("%d records handed over to a stalled writer, want at most %d (pipe %d bytes, MaxQueue %d, records of %d bytes)",
			n, bound, pipe, maxQueue, len(line))
	}
	// A reader drains the pipe: everything handed over is written.
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	read := make(chan int)
	go func() {
		data, _ := io.ReadAll(r)
		read <- strings.Count(string(data), "\n")
	}()
	<-done
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := <-read; n != records {
		t.Errorf("%d lines read from the pipe, want %d", n, records)
	}
}
