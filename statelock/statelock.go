// Package statelock keeps one robotsgate process per state directory: the
// process that writes a directory's audit log, keys and CA holds an
// exclusive lock (flock) on a file in it for as long as it runs, and
// writes its PID there, so that a second process finds the first and
// says which it is instead of appending to the same log (two writers
// break its hash chain beyond repair).
//
// The lock goes with the process: a process that dies, however it dies,
// leaves the file but not the lock.
package statelock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FileName is the lock file's name in a directory.
const FileName = "robotsgate.lock"

// Lock is a held lock.
type Lock struct {
	f    *os.File
	path string
}

// HeldError says the lock is held by another process.
type HeldError struct {
	// Path is the lock file.
	Path string
	// PID is the holder's process id, 0 when it has not written it yet.
	PID int
}

func (e *HeldError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "the process " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("%s holds the lock %s", who, e.Path)
}

// ErrUnsupported is returned where the system has no flock: nothing is
// locked.
var ErrUnsupported = errors.New("statelock: locking is not supported on this system")

// Dir locks the directory dir (created with mode 0700 if missing) by its
// lock file FileName.
func Dir(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("statelock: %w", err)
	}
	return File(filepath.Join(dir, FileName))
}

// File locks the lock file path (created with mode 0640 if missing) and
// writes the process's PID in it. A lock another process holds is a
// *HeldError naming it.
func File(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("statelock: %w", err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("statelock: %s: %w", path, err)
	}
	if held {
		data, _ := os.ReadFile(path)
		f.Close()
		pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		return nil, &HeldError{Path: path, PID: pid}
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f, path: path}, nil
}

// Path is the lock file.
func (l *Lock) Path() string { return l.path }

// Release gives the lock up. The file stays: removing it would let a
// process that opened it meanwhile hold a lock on a file no one else
// finds.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the descriptor releases the flock
	l.f = nil
	return err
}
