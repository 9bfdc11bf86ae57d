package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
)

// Writer writes Records as JSON lines to a file (reopened on demand, for
// logrotate) or to standard output. A nil *Writer writes nothing. It is
// safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	path string
	w    io.Writer
	f    *os.File // nil for stdout
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
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f != nil {
		a.f.Close()
	}
	a.f, a.w = f, f
	return nil
}

// Write appends one record as one line, in a single write, so that lines
// of concurrent requests never interleave.
func (a *Writer) Write(r *Record) error {
	if a == nil {
		return nil
	}
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.w.Write(line); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	return nil
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
