package archive

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func readFetches(t *testing.T, dir string) []Fetch {
	t.Helper()
	logs, err := FetchLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []Fetch
	for _, l := range logs {
		f, err := os.Open(l)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var x Fetch
			if err := json.Unmarshal(sc.Bytes(), &x); err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			out = append(out, x)
		}
		f.Close()
	}
	return out
}

// Two processes (here two Writers) sharing a directory store each distinct
// body once, keep a fetch log each, and every body reads back checked.
func TestWritersShareADirectory(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	v1, v2 := []byte("User-agent: *\nDisallow: /a\n"), []byte("User-agent: *\nDisallow: /b\n")
	var wg sync.WaitGroup
	for i := range 20 {
		w, body := a, v1
		if i%2 == 1 {
			w, body = b, v2
		}
		wg.Go(func() {
			w.Record(Fetch{Time: time.Now(), Origin: "https://example.com", HTTPStatus: 200, Outcome: "ok", SHA256: Sum(body), Size: len(body)}, body)
		})
	}
	wg.Wait()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(readFetches(t, dir)); n != 20 {
		t.Errorf("%d fetch lines, want 20", n)
	}
	if logs, _ := FetchLogs(dir); len(logs) != 2 {
		t.Errorf("fetch logs %v, want one per writer", logs)
	}
	bodies, _ := filepath.Glob(filepath.Join(dir, "bodies", "*", "*.txt"))
	if len(bodies) != 2 {
		t.Errorf("bodies %v, want the two distinct ones", bodies)
	}
	for _, body := range [][]byte{v1, v2} {
		got, err := ReadBody(dir, Sum(body))
		if err != nil || string(got) != string(body) {
			t.Errorf("ReadBody: %q %v", got, err)
		}
	}
	if _, err := ReadBody(dir, Sum([]byte("never stored"))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing body: %v, want fs.ErrNotExist", err)
	}
}

// A body changed on disk no longer reads as the one its name promises.
func TestReadBodyChecksTheSum(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("User-agent: *\nDisallow: /\n")
	w.Record(Fetch{SHA256: Sum(body)}, body)
	w.Close()
	os.WriteFile(BodyPath(dir, Sum(body)), []byte("User-agent: *\nAllow: /\n"), 0o644)
	if _, err := ReadBody(dir, Sum(body)); err == nil {
		t.Error("a tampered body read back without error")
	}
}

// A failing disk is reported and counted, never blocks the caller.
func TestFailuresAreCountedNotBlocking(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var errs []error
	w, err := Open(dir, nil, func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(dir, "bodies"))
	os.WriteFile(filepath.Join(dir, "bodies"), nil, 0o644) // a file where the directory was
	body := []byte("x")
	w.Record(Fetch{SHA256: Sum(body)}, body)
	w.Close()
	if w.Dropped() != 1 || len(errs) != 1 {
		t.Errorf("dropped %d, errors %v; want 1 and 1", w.Dropped(), errs)
	}
	if w.Record(Fetch{}, nil) {
		t.Error("Record after Close accepted a record")
	}
}
