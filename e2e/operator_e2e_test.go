package e2e

// What a new operator hit, following the README and docs: each test runs
// the real binary as the operator did.

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// TestCLIHelpServeNamesTheStateDirCA: `help serve` says where the CA is
// created, in the state directory, not in certs/ where it was before.
func TestCLIHelpServeNamesTheStateDirCA(t *testing.T) {
	t.Parallel()
	help, _, code := runBin(t, t.TempDir(), "help", "serve")
	if code != 0 || !strings.Contains(help, "robotsgate-state/ca.pem") || strings.Contains(help, "certs/ca.pem") {
		t.Errorf("help serve: exit %d, want it to name robotsgate-state/ca.pem and not certs/ca.pem:\n%s", code, help)
	}
}

// TestCLIConfigTest: `serve -t -config FILE` and `check -config FILE` with
// no URL test a configuration as squid -k parse does: exit 0 when it is
// valid, 1 when it is not, the error naming the key and line; nothing is
// created (no state directory, no CA) and nothing listens.
//
//	robotsgate serve -t -config FILE
//	robotsgate check -config FILE
func TestCLIConfigTest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	valid := fmt.Sprintf("state_dir: %q\nlisten: 127.0.0.1:8080\npacing:\n  max_wait: 10s\n", state)
	writeFile(t, filepath.Join(dir, "valid.yaml"), valid)
	writeFile(t, filepath.Join(dir, "bad-duration.yaml"), fmt.Sprintf("state_dir: %q\npacing:\n  max_wait: ten seconds\n", state))
	writeFile(t, filepath.Join(dir, "unknown-key.yaml"), fmt.Sprintf("state_dir: %q\npacing:\n  max_wiat: 10s\n", state))
	writeFile(t, filepath.Join(dir, "no-htpasswd.yaml"), fmt.Sprintf("state_dir: %q\nauth:\n  htpasswd: %q\n", state, filepath.Join(dir, "missing")))
	// Half a CA: serve would refuse to start rather than replace it.
	halfCA := filepath.Join(dir, "half")
	if err := os.MkdirAll(halfCA, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(halfCA, "ca.pem"), "not a certificate\n")
	writeFile(t, filepath.Join(dir, "half-ca.yaml"), fmt.Sprintf("state_dir: %q\n", halfCA))
	badCA := filepath.Join(dir, "bad")
	if err := os.MkdirAll(badCA, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(badCA, "ca.pem"), "not a certificate\n")
	writeFile(t, filepath.Join(badCA, "ca-key.pem"), "not a key\n")
	writeFile(t, filepath.Join(dir, "bad-ca.yaml"), fmt.Sprintf("state_dir: %q\n", badCA))

	for _, c := range []struct {
		file   string
		code   int
		stderr string // part of the error
	}{
		{"valid.yaml", 0, ""},
		{"bad-duration.yaml", 1, `bad-duration.yaml:3: pacing.max_wait: invalid duration "ten seconds"`},
		{"unknown-key.yaml", 1, "unknown-key.yaml:3"},
		{"no-htpasswd.yaml", 1, "missing"},
		{"half-ca.yaml", 1, "its key " + filepath.Join(halfCA, "ca-key.pem") + " is missing"},
		{"bad-ca.yaml", 1, `no PEM "CERTIFICATE" block`},
	} {
		for _, args := range [][]string{{"serve", "-t", "-config", c.file}, {"check", "-config", c.file}, {"-t", "-config", c.file}} {
			out, errOut, code := runBin(t, dir, args...)
			want := "configuration " + c.file + ": valid\n"
			if c.code != 0 {
				want = "configuration " + c.file + ": invalid\n"
			}
			if code != c.code || out != want || !strings.Contains(errOut, c.stderr) || (c.code == 0) != (errOut == "") {
				t.Errorf("robotsgate %s: exit %d, stdout %q, stderr %q; want %d, %q and an error with %q",
					strings.Join(args, " "), code, out, errOut, c.code, want, c.stderr)
			}
		}
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("the configuration test created the state directory (%v): it must create nothing", err)
	}
}

// TestCLIPasswdMakesAProxyUser: `robotsgate passwd alice` prints an
// htpasswd line that auth.htpasswd takes as it is: the proxy lets alice in
// with her password and answers 407 to a wrong one. Without a user it
// prints the hash alone, for password_bcrypt.
//
//	printf '%s\n' "$PASSWORD" | robotsgate passwd alice >> htpasswd
func TestCLIPasswdMakesAProxyUser(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const password = "correct horse: battery staple"
	line, errOut, code := runBinStdin(t, dir, password+"\n", "passwd", "alice")
	if code != 0 || !strings.HasPrefix(line, "alice:$2a$10$") || strings.Count(line, "\n") != 1 {
		t.Fatalf("passwd alice: exit %d, stdout %q, stderr %q; want one line alice:$2a$10$...", code, line, errOut)
	}
	hash, _, code := runBinStdin(t, dir, password, "passwd", "-cost", "11")
	if code != 0 || !strings.HasPrefix(hash, "$2a$11$") {
		t.Errorf("passwd -cost 11 (no user, no line end): exit %d, stdout %q; want the hash alone", code, hash)
	}
	for _, c := range []struct {
		stdin string
		args  []string
		code  int
	}{
		{"\n", []string{"passwd", "alice"}, 1},                           // empty password
		{strings.Repeat("x", 73) + "\n", []string{"passwd", "alice"}, 1}, // beyond bcrypt's 72 bytes
		{"pw\n", []string{"passwd", "al:ice"}, 2},                        // would break the htpasswd line
		{"pw\n", []string{"passwd", "-cost", "4", "alice"}, 2},           // too cheap to guess
	} {
		if out, errOut, code := runBinStdin(t, dir, c.stdin, c.args...); code != c.code || out != "" || errOut == "" {
			t.Errorf("%q with %d bytes in: exit %d, stdout %q, stderr %q; want %d and an error", c.args, len(c.stdin), code, out, errOut, c.code)
		}
	}

	writeFile(t, filepath.Join(dir, "htpasswd"), line)
	o := startOrigin(t, false)
	writeFile(t, filepath.Join(dir, "cfg.yaml"), e2eConfig{dir: dir}.yaml()+fmt.Sprintf(
		"clients_default: deny\nclients:\n  - user: alice\nauth:\n  htpasswd: %q\n", filepath.Join(dir, "htpasswd")))
	p := startServe(t, dir, "-config", "cfg.yaml")
	for _, c := range []struct {
		password string
		status   int
	}{{password, http.StatusOK}, {"wrong", http.StatusProxyAuthRequired}} {
		conn := dialProxy(t, p.addr)
		auth := base64.StdEncoding.EncodeToString([]byte("alice:" + c.password))
		fmt.Fprintf(conn.conn, "GET %s/public HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", o.URL, strings.TrimPrefix(o.URL, "http://"), auth)
		resp, err := http.ReadResponse(conn.br, nil)
		if err != nil {
			t.Fatalf("password %q: %v", c.password, err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("alice with password %q: status %d, want %d", c.password, resp.StatusCode, c.status)
		}
	}
}

// TestCLIEvidenceKeyOneLiner: the documented one-liner works as typed in a
// shell, evidence-key's whole output passed as -key; a fingerprint that
// is not the key's is refused.
//
//	robotsgate verify -key "$(robotsgate evidence-key)"
func TestCLIEvidenceKeyOneLiner(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := startOrigin(t, false)
	p := serveWithStateDir(t, dir)
	if r := dialProxy(t, p.addr).get(o.URL + "/public"); r.status != 200 {
		t.Fatalf("/public: status %d, want 200", r.status)
	}
	p.stop(0)
	env := append(binEnv(), "PATH="+filepath.Dir(binary(t))+":"+os.Getenv("PATH"))
	for _, cmd := range []string{
		`robotsgate verify -config cfg.yaml -key "$(robotsgate evidence-key -config cfg.yaml)"`,
		`robotsgate report -config cfg.yaml -format json -key "$(robotsgate evidence-key -config cfg.yaml)" >/dev/null`,
	} {
		out, errOut, code := runProgram(t, dir, env, "/bin/sh", "-c", cmd)
		if code != 0 || errOut != "" {
			t.Errorf("%s: exit %d, stderr %q, stdout:\n%s", cmd, code, errOut, out)
		}
	}
	keyOut, _, _ := runBin(t, dir, "evidence-key", "-config", "cfg.yaml")
	forged := strings.Replace(keyOut, "fingerprint ", "fingerprint 0", 1)
	if _, errOut, code := runBin(t, dir, "verify", "-config", "cfg.yaml", "-key", forged); code == 0 || !strings.Contains(errOut, "is not the key's") {
		t.Errorf("verify -key with a fingerprint that is not the key's: exit %d, stderr %q; want a refusal", code, errOut)
	}
}

// TestCLIPasswdAtATerminal: at a terminal (script(1) gives it one),
// passwd asks twice and the password is not echoed; the line it prints
// checks against the password.
func TestCLIPasswdAtATerminal(t *testing.T) {
	t.Parallel()
	scriptBin := needTool(t, "script")
	const password = "hunter2-at-a-tty"
	cmd := exec.Command(scriptBin, "-qec", binary(t)+" passwd alice", "/dev/null")
	cmd.Env = binEnv()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	timer := time.AfterFunc(requestTimeout, func() { cmd.Process.Kill() })
	defer timer.Stop()
	out := bufio.NewReader(outPipe)
	var seen strings.Builder
	// Type each line only once the prompt is there: echo is off by then.
	waitFor := func(prompt string) {
		t.Helper()
		for !strings.HasSuffix(seen.String(), prompt) {
			b, err := out.ReadByte()
			if err != nil {
				t.Fatalf("waiting for %q: %v; the terminal showed %q", prompt, err, seen.String())
			}
			seen.WriteByte(b)
		}
	}
	waitFor("Password: ")
	io.WriteString(in, password+"\n")
	waitFor("Again: ")
	io.WriteString(in, password+"\n")
	rest, _ := io.ReadAll(out)
	seen.Write(rest)
	cmd.Wait()
	shown := seen.String()
	line := ""
	for _, l := range strings.Split(shown, "\n") {
		if h, ok := strings.CutPrefix(strings.TrimSpace(l), "alice:"); ok {
			line = h
		}
	}
	if strings.Contains(shown, password) || bcrypt.CompareHashAndPassword([]byte(line), []byte(password)) != nil {
		t.Errorf("the terminal showed %q; want no password and a hash of it", shown)
	}
}
