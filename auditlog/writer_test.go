package auditlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/internal/tmpfs"
)

// readLines returns the log's lines, failing the test on one that is not
// a whole record.
func readLines(t *testing.T, path string) []audit.Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("the log does not end with a newline: %q", data[max(0, len(data)-80):])
	}
	var out []audit.Record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Errorf("line %d is not a record (%v): %.80q", n, err, sc.Text())
			continue
		}
		out = append(out, r)
	}
	return out
}

// On a full disk a record is not written, the error says so, and no torn
// line is left: once space is freed the next record follows the last
// whole one.
func TestFullDiskLeavesNoTornLine(t *testing.T) {
	dir := tmpfs.Mount(t, "64k")
	path := filepath.Join(dir, "audit.log")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Write(&audit.Record{Decision: audit.Allow}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	written, failed := 1, 0
	filler := tmpfs.Fill(t, dir)
	rec := func(i int) *audit.Record {
		return &audit.Record{URL: "http://example.com/" + strings.Repeat("p", 300) + string(rune('a'+i%26)), Decision: audit.Allow}
	}
	for i := 0; i < 200 && failed == 0; i++ {
		if err := w.Write(rec(i)); err != nil {
			t.Fatal(err) // handed over: the write fails later
		}
		if err := w.Flush(); err != nil {
			failed++
			if w.Failing() == nil || w.Failures() != 1 {
				t.Errorf("after a failed write: Failing %v, Failures %d", w.Failing(), w.Failures())
			}
		} else {
			written++
		}
	}
	if failed == 0 {
		t.Fatal("200 records fitted on a full 64 KiB tmpfs")
	}
	if got := readLines(t, path); len(got) != written {
		t.Errorf("%d records in the log, want the %d written", len(got), written)
	}
	os.Remove(filler)
	w.Write(rec(0))
	if err := w.Flush(); err != nil || w.Failing() != nil {
		t.Fatalf("after space was freed: %v (Failing %v)", err, w.Failing())
	}
	if got := readLines(t, path); len(got) != written+1 {
		t.Errorf("%d records after space was freed, want %d", len(got), written+1)
	}
}

// A log whose last line was cut by a crash gets a newline before the next
// record: the torn line stays (a reader reports it), the record is whole.
func TestTornLastLineIsEndedBeforeTheNextRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	os.WriteFile(path, []byte(`{"decision":"allow"}`+"\n"+`{"decision":"dis`), 0o640)
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&audit.Record{Decision: audit.Disallow}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 || lines[1] != `{"decision":"dis` || !strings.Contains(lines[2], `"decision":"disallow"`) {
		t.Errorf("log after reopening a torn file:\n%s", data)
	}
}

// One request's huge User-Agent cannot make a line that readers refuse:
// fields are cut to their limits and the record says which.
func TestRecordFieldsAreCapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ua := strings.Repeat("é", 300_000) // 600 KB, two bytes a character
	r := &audit.Record{UserAgent: ua, Agent: ua, URL: "http://example.com/" + strings.Repeat("x", 100_000), Rule: "Disallow: /",
		Usage: make([]audit.UsageSignal, 100)}
	if err := w.Write(r); err != nil {
		t.Fatal(err)
	}
	w.Close()
	data, _ := os.ReadFile(path)
	got := readLines(t, path)
	if len(data) > 200<<10 || len(got) != 1 {
		t.Fatalf("a line of %d bytes, %d records", len(data), len(got))
	}
	g := got[0]
	if len(g.UserAgent) > 8192 || len(g.Agent) > 8192 || len(g.URL) > 65536 || len(g.Usage) != 64 || g.Rule != "Disallow: /" ||
		!strings.HasPrefix(ua, g.UserAgent) {
		t.Errorf("capped to %d, %d, %d bytes, %d signals, rule %q", len(g.UserAgent), len(g.Agent), len(g.URL), len(g.Usage), g.Rule)
	}
	if want := []string{"url", "user_agent", "agent", "usage"}; !slices.Equal(g.Truncated, want) {
		t.Errorf("truncated %q, want %q", g.Truncated, want)
	}
}
