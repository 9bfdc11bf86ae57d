package redistest

import (
	"os"
	"path/filepath"
	"testing"
)

// A redis-server anywhere on PATH is the one the tests run, as `make deps`
// accepts it there (not only Debian's /usr/bin/redis-server).
func TestBinaryIsFoundOnPath(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "redis-server")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if got, err := Binary(); err != nil || got != fake {
		t.Errorf("Binary() = %q, %v; want %q", got, err, fake)
	}
}

// The server Start runs answers: the tests that use it do not skip on a
// machine where `make deps` found redis-server.
func TestStartRunsARealServer(t *testing.T) {
	s := Start(t)
	if err := s.ping(); err != nil {
		t.Fatalf("PING %s: %v", s.Addr, err)
	}
}
