package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// Writer writes Records as JSON lines to a file (reopened on demand, for
// logrotate) or to standard output. A nil *Writer writes nothing. It is
// safe for concurrent use.
//
// A record is written whole or not at all: a write that fails part-way
// (a full disk) is cut back off the file, so the next record starts on a
// line of its own and no reader meets a torn line. A file found ending
// in a torn line (a crash) gets a newline first: the torn line stays, for
// a reader to report, and the records after it stay readable.
type Writer struct {
	mu   sync.Mutex
	path string
	w    io.Writer
	f    *os.File // nil for stdout
	// good is the file's length after the last whole record; torn: the
	// file is longer than good and must be cut back before the next write.
	good int64
	torn bool
	// failed is the last write's error, nil once a write succeeds.
	failed   atomic.Pointer[error]
	failures atomic.Int64
}

// Open opens the audit log at path for appending, creating it with mode
// 0640: "" disables it (a nil Writer), "-" is standard output.
func Open(path string) (*Writer, error) {
	switch path {
	case "":
		return nil, nil
	case "-":
		return &Writer{path: path, w: os.Stdout}, nil
	}
	a := &Writer{path: path}
	if err := a.Reopen(); err != nil {
		return nil, err
	}
	return a, nil
}

// Reopen closes and reopens the file, so a rotated log continues in a new
// file. It does nothing for standard output or a nil Writer.
func (a *Writer) Reopen() error {
	if a == nil || a.path == "-" {
		return nil
	}
	f, err := os.OpenFile(a.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	size, err := endLine(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("audit log %s: %w", a.path, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f != nil {
		a.f.Close()
	}
	a.f, a.w, a.good, a.torn = f, f, size, false
	return nil
}

// endLine makes an opened file end with a newline (or be empty) and
// returns its length.
func endLine(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 || !st.Mode().IsRegular() {
		return 0, err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, st.Size()-1); err != nil {
		return 0, err
	}
	if last[0] == '\n' {
		return st.Size(), nil
	}
	if _, err := f.Write([]byte{'\n'}); err != nil {
		return 0, fmt.Errorf("ending its torn last line: %w", err)
	}
	return st.Size() + 1, nil
}

// Write caps r (Record.Cap) and appends it as one line, in a single write,
// so that lines of concurrent requests never interleave. The error says
// why the record was not written; Failing reports it until a write
// succeeds.
func (a *Writer) Write(r *Record) error {
	if a == nil {
		return nil
	}
	r.Cap()
	line, err := json.Marshal(r)
	if err != nil {
		return a.fail(fmt.Errorf("audit log: %w", err))
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.torn {
		if err := a.f.Truncate(a.good); err != nil {
			return a.fail(fmt.Errorf("audit log: cutting a torn record: %w", err))
		}
		a.torn = false
	}
	n, err := a.w.Write(line)
	if err != nil {
		if a.f != nil && n > 0 {
			// Cut the part written off now; if that fails too, before
			// the next write.
			a.torn = a.f.Truncate(a.good) != nil
		}
		return a.fail(fmt.Errorf("audit log: %w", err))
	}
	a.good += int64(n)
	a.failed.Store(nil)
	return nil
}

func (a *Writer) fail(err error) error {
	a.failures.Add(1)
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

// Close closes the file.
func (a *Writer) Close() error {
	if a == nil || a.f == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.f.Close()
}
