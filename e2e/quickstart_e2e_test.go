//go:build unix

package e2e

// The README's quick start, followed by a test: its shell commands run as a
// newcomer would type them, with the real binary for "go run .", a loopback
// origin of this process for python3's http.server, and free loopback
// ports and temporary directories in place of 8080, 8000 and /tmp.

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// quickStartBlocks returns the lines of the fenced sh blocks of the README's
// "Quick start" section, one slice per block.
func quickStartBlocks(t *testing.T) [][]string {
	t.Helper()
	readme := readText(t, filepath.Join("..", "README.md"))
	_, section, ok := strings.Cut(readme, "\n## Quick start\n")
	if !ok {
		t.Fatal(`README.md has no "## Quick start" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var blocks [][]string
	for _, m := range regexp.MustCompile("(?ms)^```sh\n(.*?)^```").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, strings.Split(strings.TrimRight(m[1], "\n"), "\n"))
	}
	return blocks
}

// needsInternet reports whether a block names a placeholder site or a host
// of the internet: such a block is not run.
func needsInternet(block []string) bool {
	for _, line := range block {
		if strings.Contains(line, "SITE") || strings.Contains(line, "example.com") {
			return true
		}
	}
	return false
}

var commentRE = regexp.MustCompile(`\s+#\s+(.*)$`)

// The README's quick start works on a machine without internet: go run .
// creates the CA, and the local try-out's allowed page passes through the
// proxy while its disallowed page gets 403 naming the rule.
func TestQuickStartRunsOnLoopback(t *testing.T) {
	needTool(t, "curl")
	work := t.TempDir() // the repository root: robotsgate-state/ is created here
	tmp := t.TempDir()  // stands for /tmp
	proxyAddr := closedPort(t)
	subst := []string{"/tmp/", tmp + "/", "127.0.0.1:8080", proxyAddr}
	var proxy *proc
	allowed, refused := 0, 0
	for _, block := range quickStartBlocks(t) {
		if needsInternet(block) {
			t.Logf("not run (needs the internet): %s", block[0])
			continue
		}
		for _, line := range block {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			comment := ""
			if m := commentRE.FindStringSubmatch(line); m != nil {
				comment, line = m[1], strings.TrimSpace(line[:len(line)-len(m[0])])
			}
			line = strings.NewReplacer(subst...).Replace(strings.TrimSuffix(line, "&"))
			fields := strings.Fields(line)
			switch {
			case strings.HasPrefix(line, "go run ."):
				if proxy != nil {
					proxy.stop(0)
				}
				proxy = startServe(t, work, append(fields[3:], "-listen", proxyAddr, "-admin-listen", "off")...)
				if _, err := os.Stat(filepath.Join(work, "robotsgate-state", "ca.pem")); err != nil {
					t.Errorf("%s: the interception CA was not created in robotsgate-state/: %v", line, err)
				}
			case strings.HasPrefix(line, "python3 -m http.server"):
				// python3 -m http.server PORT --bind ADDR --directory DIR
				flags := map[string]string{}
				for i := 4; i+1 < len(fields); i += 2 {
					flags[fields[i]] = fields[i+1]
				}
				origin := httptest.NewServer(http.FileServer(http.Dir(flags["--directory"])))
				t.Cleanup(origin.Close)
				subst = append(subst, net.JoinHostPort(flags["--bind"], fields[3]), origin.Listener.Addr().String())
			default:
				stdout, stderr, code := runProgram(t, work, cleanEnv(), "sh", "-c", line)
				if code != 0 {
					t.Fatalf("%s: exit status %d\n%s%s", line, code, stdout, stderr)
				}
				if !strings.HasPrefix(line, "curl") || comment == "" {
					continue
				}
				if status, detail, ok := strings.Cut(comment, ", naming "); ok && status == "403" {
					refused++
					if !strings.Contains(stdout, "403 Forbidden") || !strings.Contains(stdout, strings.Trim(detail, `"`)) {
						t.Errorf("%s: want a 403 naming %s, got:\n%s", line, detail, stdout)
					}
				} else {
					allowed++
					if strings.TrimSpace(stdout) != comment {
						t.Errorf("%s: want %q, got:\n%s", line, comment, stdout)
					}
				}
			}
		}
	}
	if proxy == nil || allowed == 0 || refused == 0 {
		t.Errorf("the quick start started the proxy: %v, showed %d allowed pages and %d refusals; want the proxy, an allowed page and a 403",
			proxy != nil, allowed, refused)
	}
}
