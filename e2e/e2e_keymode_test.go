//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2EPrivateKeysOthersMayReadAreNamed: the CA key, the evidence key
// and the Web Bot Auth key made readable by group or others (a copy with
// a permissive umask): serve warns naming each file and its mode, and
// with key_permissions: refuse it does not start, naming them; keys
// created by serve itself are 0600 and draw no warning.
func TestE2EPrivateKeysOthersMayReadAreNamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := loopbackOnlyConfig + "bot_auth:\n  signature_agent: https://bots.example/.well-known/http-message-signatures-directory\n"
	writeFile(t, filepath.Join(dir, "cfg.yaml"), cfg)
	p := startServe(t, dir, "-config", "cfg.yaml", "-listen", "127.0.0.1:0", "-admin-listen", "off")
	p.stop(0)
	if strings.Contains(p.out.String(), "not private") {
		t.Errorf("keys serve created drew a warning:\n%s", p.out)
	}
	state := filepath.Join(dir, "robotsgate-state")
	keys := map[string]os.FileMode{"ca-key.pem": 0o644, "evidence-key.pem": 0o640, "bot-auth-key.pem": 0o620}
	for name, mode := range keys {
		if err := os.Chmod(filepath.Join(state, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"mitm.ca_key robotsgate-state/ca-key.pem has mode 0644: its group may read it, anyone may read it",
		"log.evidence_key robotsgate-state/evidence-key.pem has mode 0640: its group may read it",
		"bot_auth.key robotsgate-state/bot-auth-key.pem has mode 0620: its group may write it",
	}
	p = startServe(t, dir, "-config", "cfg.yaml", "-listen", "127.0.0.1:0", "-admin-listen", "off")
	p.stop(0)
	for _, w := range want {
		if !strings.Contains(p.out.String(), w) {
			t.Errorf("serve's warnings lack %q:\n%s", w, p.out)
		}
	}

	writeFile(t, filepath.Join(dir, "cfg.yaml"), cfg+"key_permissions: refuse\n")
	_, err := tryStartServe(t, dir, "-config", "cfg.yaml", "-listen", "127.0.0.1:0", "-admin-listen", "off")
	if err == nil {
		t.Fatal("serve started with key_permissions: refuse and keys others may read")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the refusal lacks %q:\n%v", w, err)
		}
	}
	for name := range keys {
		os.Chmod(filepath.Join(state, name), 0o600)
	}
	p = startServe(t, dir, "-config", "cfg.yaml", "-listen", "127.0.0.1:0", "-admin-listen", "off")
	p.stop(0)
}
