//go:build unix

package e2e

// End-to-end tests of egress.deny_hosts_files: the real binary
// refuses a host on a list file with 403 naming the file and line, follows
// the file when it is edited (no signal), keeps the previous entries when an
// edit is bad, and applies another file on SIGHUP.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// denyListConfig is a configuration with the deny list files given, for a
// client from loopback that declares purposes [train-ai]. Loopback is
// reachable (allow_networks), so only the lists refuse; they match the
// origins by their IP literals, as a request names them (the binary has no
// resolver to fake names with).
func denyListConfig(dir string, lists ...string) string {
	quoted := make([]string, len(lists))
	for i, l := range lists {
		quoted[i] = strconv.Quote(l)
	}
	return fmt.Sprintf(`# written by the end-to-end tests
listen: 127.0.0.1:0
admin_listen: ""
robots:
  fetch_user_agent: %q
  fetch_timeout: 5s
egress:
  allow_networks: [127.0.0.0/8]
  deny_hosts_files: [%s]
mitm:
  ca_cert: %s
  ca_key: %s
clients:
  - cidr: 127.0.0.1/32
    purposes: [train-ai]
`, e2eFetchUA, strings.Join(quoted, ", "),
		strconv.Quote(filepath.Join(dir, "robotsgate-state", "ca.pem")), strconv.Quote(filepath.Join(dir, "robotsgate-state", "ca-key.pem")))
}

// replaceFile replaces path's content by renaming a new file over it, as a
// deploy script would, so the proxy never reads it half written.
func replaceFile(t *testing.T, path, data string) {
	t.Helper()
	writeFile(t, path+".new", data)
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// checkDenyListRefusal checks a 403 egress-denied that names file:line in
// its message and its Proxy-Status.
func checkDenyListRefusal(t *testing.T, what string, r response, file string, line int) {
	t.Helper()
	where := fmt.Sprintf("%s:%d", file, line)
	if r.status != 403 || r.header.Get("X-Robotsgate-Decision") != "egress-denied" ||
		!strings.Contains(r.body, "deny list of egress.deny_hosts_files: "+where) ||
		!strings.Contains(r.header.Get("Proxy-Status"), where) {
		t.Errorf("%s: %d %q, Proxy-Status %q, body %q; want 403 egress-denied naming %s",
			what, r.status, r.header.Get("X-Robotsgate-Decision"), r.header.Get("Proxy-Status"), r.body, where)
	}
}

func TestE2EDenyListFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := startOrigin(t, false)
	port := o.URL[strings.LastIndex(o.URL, ":")+1:]
	other := "http://127.0.0.2:" + port + "/page" // nothing listens there: only a list can refuse it with 403
	list := filepath.Join(dir, "deny.txt")
	writeFile(t, list, "# e2e deny list\n\n127.0.0.1   # the origin\n")
	cfgPath := filepath.Join(dir, "cfg.yaml")
	writeFile(t, cfgPath, denyListConfig(dir, list))
	p := startServe(t, dir, "-config", cfgPath)
	c := proxyClient(t, p.addr, filepath.Join(dir, "robotsgate-state", "ca.pem"))

	checkDenyListRefusal(t, "GET a listed host", get(t, c, o.URL+"/public/listed"), list, 3)
	checkDenyListRefusal(t, "CONNECT a listed host", dialProxy(t, p.addr).connect("127.0.0.1:"+port), list, 3)
	if o.count() != 0 {
		t.Errorf("the listed origin was contacted %d times", o.count())
	}

	// The file edited, no signal: the origin's entry removed, another added.
	// Polled until the decision changes, within a few of the proxy's checks.
	replaceFile(t, list, "# e2e deny list, edited\n*.blocked.test\n127.0.0.2\n")
	deadline := time.Now().Add(logTimeout)
	for r := get(t, c, o.URL+"/public/after-edit"); r.status != 200; r = get(t, c, o.URL+"/public/after-edit") {
		if time.Now().After(deadline) {
			t.Fatalf("the edited list did not apply within %v: still %d %q\n%s", logTimeout, r.status, r.body, p.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.waitLog("deny list reloaded", 1)
	checkDenyListRefusal(t, "GET a host added by the edit", get(t, c, other), list, 3)

	// A bad edit: logged with its file and line, the previous entries kept.
	replaceFile(t, list, "127.0.0.1\nhttp://127.0.0.2/\n")
	p.waitLog("deny list not reloaded", 1)
	if !strings.Contains(p.out.String(), list+":2: ") {
		t.Errorf("the log does not name %s:2:\n%s", list, p.out)
	}
	if r := get(t, c, o.URL+"/public/after-bad-edit"); r.status != 200 {
		t.Errorf("after a bad edit: %d %q, want the previous list (origin allowed)", r.status, r.body)
	}
	checkDenyListRefusal(t, "after a bad edit", get(t, c, other), list, 3)

	// SIGHUP with a configuration naming another file applies it at once.
	second := filepath.Join(dir, "second.txt")
	writeFile(t, second, "127.0.0.1\n")
	writeFile(t, cfgPath, denyListConfig(dir, second))
	p.signal(syscall.SIGHUP)
	p.waitLog("config reloaded", 1)
	checkDenyListRefusal(t, "GET after SIGHUP", get(t, c, o.URL+"/public/after-sighup"), second, 1)
	if r := get(t, c, other); r.status == 403 {
		t.Errorf("a host of the list no longer used: %d %q", r.status, r.body)
	}
	if o.saw("", "/public/after-sighup") || !o.saw("", "/public/after-edit") {
		t.Errorf("the origin saw after-sighup %t, after-edit %t", o.saw("", "/public/after-sighup"), o.saw("", "/public/after-edit"))
	}
}

// A list file that cannot be read stops serve with an error naming the key,
// before anything (the CA) is created.
func TestE2EDenyListMissingAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "cfg.yaml"), denyListConfig(dir, filepath.Join(dir, "missing.txt")))
	_, errOut, code := runBin(t, dir, "serve", "-config", "cfg.yaml", "-admin-listen", "off")
	if code == 0 || !strings.Contains(errOut, "egress.deny_hosts_files") || !strings.Contains(errOut, "missing.txt") {
		t.Errorf("exit %d, stderr %q; want an error naming egress.deny_hosts_files and the file", code, errOut)
	}
	for _, d := range []string{"certs", "robotsgate-state"} {
		if _, err := os.Stat(filepath.Join(dir, d)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s/ was created before the missing list was found (stat: %v)", d, err)
		}
	}
}
