package listener

import (
	"errors"
	"log/slog"
	"os"
	"syscall"
	"testing"
)

// A process out of descriptors (EMFILE) cannot accept: the listener
// retries with its backoff, says it is failing, and accepts the waiting
// client as soon as a descriptor is free, where a plain accept loop ends.
// Real descriptors: the process's limit is lowered and filled with files.
func TestAcceptSurvivesRunningOutOfDescriptors(t *testing.T) {
	logs := newLogSignal("cannot accept", "accepts connections again")
	l := listen(t, Options{What: "the test listener", Log: slog.New(logs)})
	client := dialFrom(t, l, "127.0.0.1") // waits in the backlog
	files := exhaustDescriptors(t)
	ch := acceptOne(l)
	logs.wait(t, "cannot accept")
	if err := l.Err(); err == nil {
		t.Error("Err is nil while accept fails with EMFILE")
	}
	if s := l.Stats(); s.Accepting || s.AcceptErrors == 0 {
		t.Errorf("stats %+v while failing: want not accepting, errors counted", s)
	}
	for _, f := range files {
		f.Close()
	}
	c := got(t, ch)
	if c.RemoteAddr().String() != client.LocalAddr().String() {
		t.Errorf("accepted %s, want the waiting client %s", c.RemoteAddr(), client.LocalAddr())
	}
	logs.wait(t, "accepts connections again")
	if err := l.Err(); err != nil {
		t.Errorf("Err after recovering: %v", err)
	}
}

// exhaustDescriptors lowers the process's descriptor limit to a little
// above what it holds and opens files until none is left; the limit is
// restored when the test ends (the caller closes the files).
func exhaustDescriptors(t *testing.T) []*os.File {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open descriptors: %v", err)
	}
	low := old
	low.Cur = uint64(len(entries) + 16)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var files []*os.File
	t.Cleanup(func() {
		for _, f := range files {
			f.Close()
		}
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
	})
	for range 64 {
		f, err := os.Open(os.DevNull)
		if errors.Is(err, syscall.EMFILE) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	t.Fatal("64 files opened under a limit 16 above the descriptors open: the limit does not hold")
	return nil
}
