//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestACrashLeavesNoTornLine kills the real binary (SIGKILL) while eight
// keep-alive clients crawl through it with the audit log on: every line
// the killed process left is a whole record. Its last line is then cut as
// a write the kernel cut short would cut it, unless the kill did so. A
// restart on the same state directory ends the cut line with a newline
// before the next record, the records after the crash chain on, and after
// a clean stop verify finds the chain unbroken, naming the cut line as
// torn, never as a break.
// (docs/operations.md, "What a crash can lose".)
func TestACrashLeavesNoTornLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := startOrigin(t, false)
	logPath := filepath.Join(dir, "robotsgate-state", "audit.log")
	p := serveWithStateDir(t, dir)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		client := proxyClient(t, p.addr, "")
		wg.Go(func() {
			for i := range 100_000 { // bounded; the kill ends it far sooner
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Get(fmt.Sprintf("%s/public/%d/%d", o.URL, g, i))
				if err != nil {
					return // the proxy was killed
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	// Kill it mid-crawl: once the log holds 2,000 lines, polled (bounded),
	// so that batches are being written when the signal lands.
	deadline := time.Now().Add(60 * time.Second)
	for auditLines(t, logPath) < 2000 {
		if time.Now().After(deadline) || p.exited() {
			close(stop)
			wg.Wait()
			t.Fatalf("the audit log did not reach 2,000 lines within 60s (%d); output:\n%s", auditLines(t, logPath), p.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	close(stop)
	wg.Wait()

	crashed := readText(t, logPath)
	if strings.HasSuffix(crashed, "\n") {
		// The kill landed between writes, as it mostly does. A write the
		// kernel cuts short (at a page boundary, when the killed process
		// had a large batch under way) is what it does otherwise: cut the
		// last line as such a write would, so a restart meets it.
		last := strings.LastIndexByte(crashed[:len(crashed)-1], '\n') + 1
		crashed = crashed[:last+(len(crashed)-last)/2]
		if err := os.WriteFile(logPath, []byte(crashed), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	whole, cut := crashed, ""
	if i := strings.LastIndexByte(crashed, '\n'); i+1 < len(crashed) {
		whole, cut = crashed[:i+1], crashed[i+1:]
	}
	n := wantRecords(t, whole, 0)
	t.Logf("killed with %d whole lines in the log; a cut line of %d bytes after them", n, len(cut))

	// A restart ends a cut line and chains on; a clean stop signs.
	p = serveWithStateDir(t, dir)
	if r := dialProxy(t, p.addr).get(o.URL + "/public/after"); r.status != 200 {
		t.Fatalf("after the restart: /public/after: %d, want 200", r.status)
	}
	p.stop(0)
	after := readText(t, logPath)
	if !strings.HasPrefix(after, crashed) || !strings.HasSuffix(after, "\n") {
		t.Fatalf("the restart changed what the crash left, or left a line unended (%d bytes, then %d)", len(crashed), len(after))
	}
	rest := after[len(crashed):]
	if !strings.HasPrefix(rest, "\n") {
		t.Fatalf("the cut line was not ended before the next record: %.200q", rest)
	}
	if wantRecords(t, rest[1:], n+1) == 0 {
		t.Fatal("no record after the restart")
	}

	out, errOut, code := runBin(t, dir, "verify")
	torn := strings.Count(out, "not a whole record")
	if strings.Contains(out, "BROKEN") || torn != 1 || !strings.Contains(out, fmt.Sprintf("audit.log:%d:", n+1)) {
		t.Errorf("verify after the crash: exit %d, %d torn lines, output:\n%s\n%s\nwant line %d named torn, no break", code, torn, out, errOut, n+1)
	}
}

// wantRecords fails unless every line of text is a whole JSON record
// (first names the first line's number in the file, for the message) and
// returns how many there are.
func wantRecords(t *testing.T, text string, first int) int {
	t.Helper()
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, line := range lines {
		var rec map[string]any
		if !strings.HasSuffix(line, "\n") || json.Unmarshal([]byte(line), &rec) != nil || rec["prev_sha256"] == nil {
			t.Fatalf("audit.log:%d is not a whole record: %.200q", first+i+1, line)
		}
	}
	return len(lines)
}

// auditLines counts the lines of the audit log at path (0 before it exists),
// without parsing them: read while batches are being written, its last
// line may be one the kernel is still copying (auditRecords would fail).
func auditLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}
