package statelock

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A directory is locked once: a second lock (another open file, as
// another process has) is refused naming the holder's PID and the file,
// and granted once the first is released. The PID is in the file.
func TestADirectoryIsLockedOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	first, err := Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("the directory: %v %v, want mode 0700", st.Mode(), err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, FileName))
	if strings.TrimSpace(string(data)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("the lock file holds %q, want the PID %d", data, os.Getpid())
	}
	_, err = Dir(dir)
	var held *HeldError
	if !errors.As(err, &held) || held.PID != os.Getpid() || held.Path != filepath.Join(dir, FileName) ||
		!strings.Contains(err.Error(), "the process "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("a second lock: %v, want it refused naming PID %d", err, os.Getpid())
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := Dir(dir)
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	again.Release()
}
