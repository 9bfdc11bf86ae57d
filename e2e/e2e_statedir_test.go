package e2e

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2ECAInCertsKeepsWorking: a working directory where an older
// robotsgate created its CA in certs/ keeps that CA (clients trust it)
// instead of getting a new one in robotsgate-state/, and the log says how
// to move it.
func TestE2ECAInCertsKeepsWorking(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if out, errOut, code := runBin(t, dir, "ca", "init", "-dir", "certs"); code != 0 {
		t.Fatalf("ca init -dir certs: exit %d\n%s%s", code, out, errOut)
	}
	p := startServe(t, dir, "-listen", "127.0.0.1:0", "-admin-listen", "off")
	p.stop(0)
	if out := p.out.String(); !strings.Contains(out, "using the interception CA in certs/") {
		t.Errorf("serve does not say it uses the CA in certs/:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "robotsgate-state", "ca.pem")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("serve created a second CA in robotsgate-state/ (stat: %v)", err)
	}
}
