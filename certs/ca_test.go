package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGenerateCA(t *testing.T) {
	ca := newTestCA(t)
	c := ca.Certificate()
	if c.Subject.CommonName != CACommonName {
		t.Errorf("CommonName = %q, want %q", c.Subject.CommonName, CACommonName)
	}
	if !c.IsCA || !c.BasicConstraintsValid || c.MaxPathLen != 0 || !c.MaxPathLenZero {
		t.Errorf("basic constraints: IsCA=%v valid=%v MaxPathLen=%d zero=%v", c.IsCA, c.BasicConstraintsValid, c.MaxPathLen, c.MaxPathLenZero)
	}
	wantUsage := x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	if c.KeyUsage != wantUsage {
		t.Errorf("KeyUsage = %v, want %v", c.KeyUsage, wantUsage)
	}
	pub, ok := c.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("public key %T is not ECDSA P-256", c.PublicKey)
	}
	if !c.NotBefore.Before(t0) || c.NotAfter.Before(t0.AddDate(9, 11, 0)) {
		t.Errorf("validity %v .. %v does not cover %v + ~10 years", c.NotBefore, c.NotAfter, t0)
	}
	if c.SerialNumber.Sign() <= 0 || c.SerialNumber.BitLen() < 64 {
		t.Errorf("serial %v is not a large positive random number", c.SerialNumber)
	}
	if other := newTestCA(t); other.Certificate().SerialNumber.Cmp(c.SerialNumber) == 0 {
		t.Error("two CAs got the same serial")
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
}

func TestCreateCAFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "certs")
	certPath, keyPath, err := CreateCA(dir, false, t0)
	if err != nil {
		t.Fatalf("CreateCA: %v", err)
	}
	if certPath != filepath.Join(dir, "ca.pem") || keyPath != filepath.Join(dir, "ca-key.pem") {
		t.Errorf("paths = %s, %s", certPath, keyPath)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, certPath: 0o644, keyPath: 0o600} {
		if got := fileMode(t, path); got != want {
			t.Errorf("mode of %s = %v, want %v", path, got, want)
		}
	}
	keyData, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if block, _ := pem.Decode(keyData); block == nil || block.Type != "PRIVATE KEY" {
		t.Errorf("key file is not a PKCS#8 PRIVATE KEY PEM block")
	}
	if _, err := LoadCA(certPath, keyPath); err != nil {
		t.Errorf("LoadCA of created files: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("directory holds %d entries, want 2 (no leftover temporary files)", len(entries))
	}
}

func TestCreateCAExistingDirKeepsMode(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, _, err := CreateCA(dir, false, t0); err != nil {
		t.Fatal(err)
	}
	if got := fileMode(t, dir); got != 0o750 {
		t.Errorf("existing directory mode changed to %v", got)
	}
}

func TestCreateCARefusesOverwrite(t *testing.T) {
	for _, existing := range []string{CertFileName, KeyFileName} {
		t.Run(existing, func(t *testing.T) {
			dir := t.TempDir()
			old := writeTestFile(t, dir, existing, []byte("precious"))
			_, _, err := CreateCA(dir, false, t0)
			if err == nil {
				t.Fatal("CreateCA overwrote an existing file")
			}
			if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), old) || !strings.Contains(err.Error(), "-force") {
				t.Errorf("error %q should wrap fs.ErrExist, name %s and mention -force", err, old)
			}
			if data, _ := os.ReadFile(old); string(data) != "precious" {
				t.Errorf("existing file changed to %q", data)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("directory holds %d entries, want only the existing file", len(entries))
			}
		})
	}
}

func TestCreateCAForce(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath, err := CreateCA(dir, false, t0)
	if err != nil {
		t.Fatal(err)
	}
	first, err := LoadCA(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(keyPath, 0o644); err != nil { // a careless edit; force must fix it
		t.Fatal(err)
	}
	if _, _, err := CreateCA(dir, true, t0); err != nil {
		t.Fatalf("CreateCA force: %v", err)
	}
	second, err := LoadCA(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if first.Certificate().SerialNumber.Cmp(second.Certificate().SerialNumber) == 0 {
		t.Error("force did not replace the CA")
	}
	if got := fileMode(t, keyPath); got != 0o600 {
		t.Errorf("key mode after force = %v, want 0600", got)
	}
	if got := fileMode(t, certPath); got != 0o644 {
		t.Errorf("cert mode after force = %v, want 0644", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("directory holds %d entries, want 2 (no leftover temporary files)", len(entries))
	}
}

func TestLoadCA(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	caKey, err := ca.keyPEM()
	if err != nil {
		t.Fatal(err)
	}
	ecCAKey := ecKey(t)
	ecCA := selfSigned(t, ecCAKey, true, x509.KeyUsageCertSign)
	ecDER, err := x509.MarshalECPrivateKey(ecCAKey)
	if err != nil {
		t.Fatal(err)
	}
	ecParams := pem.EncodeToMemory(&pem.Block{Type: "EC PARAMETERS", Bytes: []byte{0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07}})
	secKey := append(ecParams, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER})...)
	rsaCAKey := rsaKey(t)
	rsaCA := selfSigned(t, rsaCAKey, true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature)
	pkcs1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaCAKey)})
	leafKey := ecKey(t)
	notCA := selfSigned(t, leafKey, false, x509.KeyUsageDigitalSignature)
	noCertSign := selfSigned(t, leafKey, true, x509.KeyUsageDigitalSignature)
	encrypted := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1, 2, 3}})
	procType := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-128-CBC,00"}, Bytes: []byte{1}})
	chain := append(ca.CertPEM(), certPEM(notCA)...)

	tests := []struct {
		name      string
		cert, key []byte
		badFile   string // "cert" or "key": the file the error must name; "" for success
		wantErr   string
	}{
		{name: "pkcs8 ecdsa", cert: ca.CertPEM(), key: caKey},
		{name: "sec1 ec with parameters block", cert: certPEM(ecCA), key: secKey},
		{name: "pkcs1 rsa", cert: certPEM(rsaCA), key: pkcs1},
		{name: "pkcs8 rsa", cert: certPEM(rsaCA), key: pkcs8PEM(t, rsaCAKey)},
		{name: "chain file uses first certificate", cert: chain, key: caKey},
		{name: "mismatched key", cert: ca.CertPEM(), key: pkcs8PEM(t, leafKey), badFile: "key", wantErr: "does not match"},
		{name: "not a CA", cert: certPEM(notCA), key: pkcs8PEM(t, leafKey), badFile: "cert", wantErr: "not a CA"},
		{name: "CA without certSign", cert: certPEM(noCertSign), key: pkcs8PEM(t, leafKey), badFile: "cert", wantErr: "certSign"},
		{name: "garbage cert", cert: []byte("hello\n"), key: caKey, badFile: "cert", wantErr: "no PEM"},
		{name: "key in cert file", cert: caKey, key: caKey, badFile: "cert", wantErr: "no PEM"},
		{name: "corrupt cert block", cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")}), key: caKey, badFile: "cert", wantErr: "x509"},
		{name: "garbage key", cert: ca.CertPEM(), key: []byte("-----BEGIN NOTHING-----\n"), badFile: "key", wantErr: "no PEM"},
		{name: "corrupt key block", cert: ca.CertPEM(), key: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("junk")}), badFile: "key", wantErr: "PRIVATE KEY"},
		{name: "encrypted pkcs8", cert: ca.CertPEM(), key: encrypted, badFile: "key", wantErr: "encrypted"},
		{name: "encrypted legacy", cert: ca.CertPEM(), key: procType, badFile: "key", wantErr: "encrypted"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certPath := writeTestFile(t, dir, tt.name+"-cert.pem", tt.cert)
			keyPath := writeTestFile(t, dir, tt.name+"-key.pem", tt.key)
			got, err := LoadCA(certPath, keyPath)
			if tt.badFile == "" {
				if err != nil {
					t.Fatalf("LoadCA: %v", err)
				}
				if !bytes.HasPrefix(tt.cert, got.CertPEM()) {
					t.Error("loaded CA is not the file's first certificate")
				}
				return
			}
			if err == nil {
				t.Fatalf("case %d: LoadCA accepted it", i)
			}
			t.Log(err)
			want := map[string]string{"cert": certPath, "key": keyPath}[tt.badFile]
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q should name %s and contain %q", err, want, tt.wantErr)
			}
		})
	}
}

func TestLoadCAMissingFile(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath, err := CreateCA(dir, false, t0)
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope.pem")
	for _, paths := range [][2]string{{missing, keyPath}, {certPath, missing}} {
		_, err := LoadCA(paths[0], paths[1])
		if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
			t.Errorf("LoadCA(%s, %s) error = %v, want one naming %s wrapping fs.ErrNotExist", paths[0], paths[1], err, missing)
		}
	}
}

func TestNewCA(t *testing.T) {
	ca := newTestCA(t)
	if _, err := NewCA(ca.Certificate(), ca.signer); err != nil {
		t.Errorf("NewCA of a matching pair: %v", err)
	}
	if _, err := NewCA(ca.Certificate(), ecKey(t)); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("NewCA with another key: %v", err)
	}
	k := ecKey(t)
	if _, err := NewCA(selfSigned(t, k, false, 0), k); err == nil || !strings.Contains(err.Error(), "not a CA") {
		t.Errorf("NewCA with a leaf: %v", err)
	}
	if _, err := NewCA(nil, k); err == nil {
		t.Error("NewCA(nil, key) succeeded")
	}
}

func TestEnsureCA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	certPath, keyPath := filepath.Join(dir, "my-ca.crt"), filepath.Join(dir, "my-ca.key")
	ca, created, err := EnsureCA(certPath, keyPath, t0)
	if err != nil || !created || ca == nil {
		t.Fatalf("first EnsureCA = %v, %v, %v; want a created CA", ca, created, err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, certPath: 0o644, keyPath: 0o600} {
		if got := fileMode(t, path); got != want {
			t.Errorf("mode of %s = %v, want %v", path, got, want)
		}
	}
	again, created, err := EnsureCA(certPath, keyPath, t0.Add(time.Hour))
	if err != nil || created {
		t.Fatalf("second EnsureCA = %v, %v; want the existing CA loaded", created, err)
	}
	if !again.Certificate().Equal(ca.Certificate()) {
		t.Error("second EnsureCA returned a different CA")
	}
}

func TestEnsureCAOnlyOneFile(t *testing.T) {
	for _, keep := range []string{"cert", "key"} {
		t.Run("only "+keep, func(t *testing.T) {
			dir := t.TempDir()
			certPath, keyPath, err := CreateCA(dir, false, t0)
			if err != nil {
				t.Fatal(err)
			}
			missing := map[string]string{"cert": keyPath, "key": certPath}[keep]
			if err := os.Remove(missing); err != nil {
				t.Fatal(err)
			}
			_, _, err = EnsureCA(certPath, keyPath, t0)
			if err == nil {
				t.Fatal("EnsureCA succeeded with one file missing")
			}
			if !strings.Contains(err.Error(), certPath) || !strings.Contains(err.Error(), keyPath) || !strings.Contains(err.Error(), "missing") {
				t.Errorf("error %q should name both files and say which is missing", err)
			}
			if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("EnsureCA recreated %s", missing)
			}
		})
	}
}

func TestTrustInstructions(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "ca.pem")
	spaced := filepath.Join(t.TempDir(), "my certs", "ca.pem")
	tests := []struct {
		path string
		want []string
	}{
		{abs, []string{
			"--cacert " + abs,
			"SSL_CERT_FILE=" + abs,
			"REQUESTS_CA_BUNDLE=" + abs,
			"NODE_EXTRA_CA_CERTS=" + abs,
			"cp " + abs + " /usr/local/share/ca-certificates/robotsgate.crt && update-ca-certificates",
		}},
		{spaced, []string{"--cacert '" + spaced + "'", "SSL_CERT_FILE='" + spaced + "'"}},
	}
	for _, tt := range tests {
		got := TrustInstructions(tt.path)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("TrustInstructions(%q) lacks %q:\n%s", tt.path, w, got)
			}
		}
	}
	rel := TrustInstructions("certs/ca.pem")
	if !strings.Contains(rel, "--cacert /") {
		t.Errorf("a relative path should be made absolute:\n%s", rel)
	}
}

func TestShellQuote(t *testing.T) {
	tests := map[string]string{
		"/a/b-c_d.pem": "/a/b-c_d.pem",
		"/a b":         "'/a b'",
		"it's":         `'it'\''s'`,
		"":             "''",
		"$HOME/x":      "'$HOME/x'",
	}
	for in, want := range tests {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
