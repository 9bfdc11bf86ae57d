//go:build unix

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2EASecondServeOnOneStateDirRefusesToStart: two instances started
// from one directory (a new user's second `serve`) would append to one
// audit log and break its chain beyond repair. The second refuses to
// start, naming the first's PID and the lock; ca init refuses to replace
// the running instance's CA; once the first stops, the second starts, and
// the log verifies.
func TestE2EASecondServeOnOneStateDirRefusesToStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := startOrigin(t, false)
	first := serveWithStateDir(t, dir)
	dialProxy(t, first.addr).get(o.URL + "/a")
	pid := first.cmd.Process.Pid
	want := []string{fmt.Sprintf("robotsgate PID %d", pid), filepath.Join("robotsgate-state", "robotsgate.lock")}

	_, err := tryStartServe(t, dir, "-config", "cfg.yaml", "-listen", "127.0.0.1:0", "-admin-listen", "off")
	if err == nil {
		t.Fatal("a second serve on the same state directory started")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the second serve's refusal does not name %q:\n%v", w, err)
		}
	}
	out, errOut, code := runBin(t, dir, "ca", "init", "-force")
	if code != 2 || !strings.Contains(errOut, want[0]) {
		t.Errorf("ca init -force while serve runs: exit %d, want 2 naming %q; stdout %q stderr %q", code, want[0], out, errOut)
	}

	dialProxy(t, first.addr).get(o.URL + "/b")
	first.stop(0)
	second := serveWithStateDir(t, dir)
	dialProxy(t, second.addr).get(o.URL + "/c")
	second.stop(0)
	if out, errOut, code := runBin(t, dir, "verify"); code != 0 || !strings.Contains(out, "hash chain: whole") {
		t.Errorf("verify after one instance at a time: exit %d\n%s%s", code, out, errOut)
	}
}

// TestE2EOneAuditLogForTwoStateDirsRefused: instances with state
// directories of their own but one log.audit outside them: the second
// refuses to start, naming the log and the first's PID.
func TestE2EOneAuditLogForTwoStateDirsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "shared", "audit.log")
	for _, name := range []string{"a", "b"} {
		writeFile(t, filepath.Join(dir, name+".yaml"), "state_dir: "+filepath.Join(dir, name)+"\nlog:\n  audit: "+logPath+"\n")
	}
	first := startServe(t, dir, "-config", "a.yaml", "-listen", "127.0.0.1:0", "-admin-listen", "off")
	_, err := tryStartServe(t, dir, "-config", "b.yaml", "-listen", "127.0.0.1:0", "-admin-listen", "off")
	if err == nil {
		t.Fatal("a second serve on the same audit log started")
	}
	for _, w := range []string{"the audit log " + logPath, fmt.Sprintf("robotsgate PID %d", first.cmd.Process.Pid), logPath + ".lock"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the refusal does not name %q:\n%v", w, err)
		}
	}
}
