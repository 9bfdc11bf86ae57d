// Package tmpfs mounts small tmpfs file systems for tests that need a
// disk to fill: what a full disk does to a writer cannot be faked by a
// writer of the test's own.
package tmpfs

import (
	"os"
	"os/exec"
	"testing"
)

// Mount mounts a tmpfs of size (mount's size= option, e.g. "64k") on a new
// directory, unmounted when the test ends, and returns the directory. It
// needs root; without it the test is skipped (make test runs as root in
// CI).
func Mount(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs to fill needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0755", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", dir, err, out)
		}
	})
	return dir
}

// Fill writes a file in dir until the file system is full, and returns
// its path: removing it frees the space.
func Fill(t testing.TB, dir string) string {
	t.Helper()
	path := dir + "/filler"
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			return path // full
		}
	}
}
