//go:build unix

package e2e

// The witness through the real binaries: `robotsgate witness` on loopback
// TLS, a serve sending it its checkpoints, and the holder of the evidence
// key rewriting the log afterwards.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/auditlog"
)

// witnessTLS writes a CA and a certificate for 127.0.0.1 it signs, and
// returns the files: the CA's certificate, the certificate, its key.
func witnessTLS(t *testing.T) (ca, cert, key string) {
	t.Helper()
	dir := t.TempDir()
	newCert := func(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
		tmpl.SerialNumber = serial
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
		if parent == nil {
			parent, parentKey = tmpl, k
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &k.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c, k
	}
	caCert, caKey := newCert(&x509.Certificate{Subject: pkix.Name{CommonName: "witness test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}, nil, nil)
	leaf, leafKey := newCert(&x509.Certificate{Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, caCert, caKey)
	keyDER, _ := x509.MarshalECPrivateKey(leafKey)
	ca, cert, key = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeFile(t, ca, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw})))
	writeFile(t, cert, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})))
	writeFile(t, key, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	return ca, cert, key
}

// witnessProc is a running `robotsgate witness`.
type witnessProc struct {
	*proc
	url, key string // its URL and public key, as it printed them
}

var (
	witnessURLRE = regexp.MustCompile(`witness on (https://\S+)`)
	witnessKeyRE = regexp.MustCompile(`witness: key (\S+) `)
)

// startWitness starts `robotsgate witness args...` in dir and waits until it
// prints its URL.
func startWitness(t *testing.T, dir string, args ...string) *witnessProc {
	t.Helper()
	p := &proc{t: t, cmd: exec.Command(binary(t), append([]string{"witness"}, args...)...), out: newLogBuffer(), done: make(chan struct{})}
	p.cmd.Dir, p.cmd.Env = dir, binEnv()
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.stop(0) })
	var m []string
	if !p.out.waitFor(startTimeout, p.done, func(s string) bool { m = witnessURLRE.FindStringSubmatch(s); return m != nil }) {
		t.Fatalf("robotsgate witness did not start:\n%s", p.out)
	}
	k := witnessKeyRE.FindStringSubmatch(p.out.String())
	if k == nil {
		t.Fatalf("robotsgate witness did not print its key:\n%s", p.out)
	}
	return &witnessProc{proc: p, url: m[1], key: k[1]}
}

// adminGetText GETs an admin path and returns status and body.
func adminGetText(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitAdmin polls an admin path (the witness is reached from the proxy's
// own goroutine; nothing signals its progress) until cond holds.
func waitAdmin(t *testing.T, addr, path, what string, cond func(code int, body string) bool) {
	t.Helper()
	deadline := time.Now().Add(logTimeout + 10*time.Second)
	for {
		code, body := adminGetText(t, addr, path)
		if cond(code, body) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s answered %d:\n%s", what, path, code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// resign rewrites the log as the holder of the evidence key can: edit
// changes the records, every line is linked again and every checkpoint
// signed again with its own time, count and interval; the head beside
// the log follows.
func resign(t *testing.T, path string, key []byte, edit func(string) string) {
	t.Helper()
	k, err := auditlog.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	prev := ""
	var out bytes.Buffer
	for _, l := range logLines(t, readText(t, path)) {
		var m struct {
			Checkpoint *audit.Checkpoint `json:"checkpoint"`
		}
		json.Unmarshal([]byte(l), &m)
		var line string
		if cp := m.Checkpoint; cp != nil {
			iv, _ := cp.Interval()
			obj, err := auditlog.CheckpointObject(k, prev, cp.Records, cp.Time, iv)
			if err != nil {
				t.Fatal(err)
			}
			line = strings.TrimSuffix(string(auditlog.ChainLine(prev, obj)), "\n")
		} else {
			rest := edit(l)[len(chainPrefix):]
			line = chainPrefix + prev + rest[strings.IndexByte(rest, '"'):]
		}
		out.WriteString(line + "\n")
		prev = auditlog.LineHash([]byte(line))
	}
	writeFile(t, path, out.String())
	writeFile(t, path+".head", prev+"\n")
}

// TestE2EWitnessCatchesTheKeyHolder: an instance sends its checkpoints to
// a witness run apart (robotsgate witness). While the witness is down,
// requests are still served, and /readyz and the metrics say so; it
// recovers by itself. Afterwards the holder of the evidence key rewrites
// a record and signs every checkpoint again: verify with the key alone
// passes (nothing else could tell), verify against the witness, its list
// or the receipts kept beside the log, fails naming the checkpoints it
// saw that the log no longer holds, and the witness refuses to witness
// the forged checkpoints.
func TestE2EWitnessCatchesTheKeyHolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := startOrigin(t, false)
	// A first run creates the evidence key, which the witness is given.
	first := serveWithStateDir(t, dir)
	dialProxy(t, first.addr).get(o.URL + "/before-the-witness")
	first.stop(0)
	keyOut, _, _ := runBin(t, dir, "evidence-key", "-config", "cfg.yaml")
	pub := regexp.MustCompile(`public key  (\S+)`).FindStringSubmatch(keyOut)
	if pub == nil {
		t.Fatalf("evidence-key: %q", keyOut)
	}
	ca, cert, key := witnessTLS(t)
	wargs := []string{"-allow", pub[1], "-tls-cert", cert, "-tls-key", key, "-dir", filepath.Join(dir, "witness")}
	w := startWitness(t, dir, append(wargs, "-listen", "127.0.0.1:0")...)
	witnessAddr := strings.TrimSuffix(strings.TrimPrefix(w.url, "https://"), "/")

	writeFile(t, filepath.Join(dir, "cfg.yaml"), loopbackOnlyConfig+fmt.Sprintf(
		"log:\n  checkpoint_records: 2\n  witness:\n    url: %s\n    key: %s\n    ca: %s\n", w.url, w.key, ca))
	p := startServe(t, dir, "-config", "cfg.yaml", "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0")
	am := regexp.MustCompile(`admin=(127\.0\.0\.1:\d+)`).FindStringSubmatch(p.out.String())
	if am == nil {
		t.Fatalf("no admin address:\n%s", p.out)
	}
	admin := am[1]
	c := dialProxy(t, p.addr)
	for _, path := range []string{"/a", "/private/b", "/c", "/d"} {
		c.get(o.URL + path)
	}
	waitAdmin(t, admin, "/metrics", "3 checkpoints witnessed (when opened, after 2 and 4 records)", func(_ int, m string) bool {
		return regexp.MustCompile(`(?m)^robotsgate_witness_checkpoints_total [3-9]`).MatchString(m)
	})
	if code, body := adminGetText(t, admin, "/readyz"); code != 200 {
		t.Errorf("/readyz with the witness up: %d %s", code, body)
	}

	// The witness goes down: requests are served, the failure shows.
	w.stop(0)
	for _, path := range []string{"/e", "/f"} { // a checkpoint
		if r := c.get(o.URL + path); r.status != 200 {
			t.Errorf("%s while the witness is down: %d, want 200 (a witness's outage refuses nothing)", path, r.status)
		}
	}
	waitAdmin(t, admin, "/readyz", "/readyz failing for the witness", func(code int, body string) bool {
		return code == 503 && strings.Contains(body, "witness")
	})
	if _, m := adminGetText(t, admin, "/metrics"); !regexp.MustCompile(`(?m)^robotsgate_witness_failures_total [1-9]`).MatchString(m) ||
		!regexp.MustCompile(`(?m)^robotsgate_witness_pending [1-9]`).MatchString(m) {
		t.Errorf("metrics while the witness is down:\n%s", grepLines(m, "robotsgate_witness_"))
	}
	w = startWitness(t, dir, append(wargs, "-listen", witnessAddr)...)
	waitAdmin(t, admin, "/readyz", "/readyz ready again once the witness is back", func(code int, _ string) bool { return code == 200 })
	c.get(o.URL + "/g")
	p.stop(0) // a last checkpoint, witnessed

	logPath := filepath.Join(dir, "robotsgate-state", "audit.log")
	receipts := logPath + ".witness"
	sources := [][]string{
		{"-witness", w.url, "-witness-key", w.key, "-witness-ca", ca}, // as a reviewer
		{"-config", "cfg.yaml", "-witness", w.url},                    // the key and the CA from log.witness
		{"-witness", receipts, "-witness-key", w.key},                 // the receipts kept beside the log
	}
	for _, src := range sources {
		out, errOut, code := runBin(t, dir, append([]string{"verify"}, src...)...)
		if code != 0 || !regexp.MustCompile(`checkpoints: \d+ signed by \S+, [4-9]\d* seen by the witness`).MatchString(out) {
			t.Errorf("verify -witness %s of the log as written: exit %d\n%s%s", src, code, out, errOut)
		}
	}

	// The key holder rewrites who asked for /private/b.
	evidenceKey := []byte(readText(t, filepath.Join(dir, "robotsgate-state", "evidence-key.pem")))
	resign(t, logPath, evidenceKey, func(l string) string {
		if strings.Contains(l, `/private/b"`) {
			return regexp.MustCompile(`"client":"[^"]*"`).ReplaceAllString(l, `"client":"192.0.2.1:4444"`)
		}
		return l
	})
	if out, errOut, code := runBin(t, dir, "verify", "-key", pub[1]); code != 0 {
		t.Fatalf("the key holder's rewrite fails verify without a witness (the forgery is wrong): exit %d\n%s%s", code, out, errOut)
	}
	for _, src := range sources {
		out, errOut, code := runBin(t, dir, append([]string{"verify"}, src...)...)
		if code != 1 || !regexp.MustCompile(`the witness saw \d+ checkpoints? that the log does not hold`).MatchString(out) {
			t.Errorf("verify -witness %s of the rewritten log: exit %d, want 1 naming what the witness saw\n%s%s", src, code, out, errOut)
		}
		_, errOut, code = runBin(t, dir, append([]string{"report", "-o", filepath.Join(dir, "r.html")}, src...)...)
		if code != 1 || !strings.Contains(errOut, "NOT EVIDENCE") {
			t.Errorf("report -witness %s of the rewritten log: exit %d, want 1\n%s", src, code, errOut)
		}
	}

	// Nor will the witness witness the forged checkpoints now.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM([]byte(readText(t, ca)))
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	forged := 0
	for _, l := range logLines(t, readText(t, logPath)) {
		var m struct {
			Checkpoint json.RawMessage `json:"checkpoint"`
		}
		if json.Unmarshal([]byte(l), &m); m.Checkpoint == nil {
			continue
		}
		resp, err := hc.Post(w.url+"v1/checkpoints", "application/json", bytes.NewReader(m.Checkpoint))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 && !strings.Contains(readText(t, receipts), string(m.Checkpoint)) {
			t.Errorf("the witness witnessed a forged checkpoint: %s", body)
		}
		forged++
	}
	if forged < 5 {
		t.Errorf("%d checkpoints tried, want the log's", forged)
	}
}
