package certs

import (
	"github.com/robotsgate/robotsgate/internal/testclock"

	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// t0 is the fixed start time of the fake clocks.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeClock is the tests' settable clock.
type fakeClock = testclock.Clock

func newFakeClock(t time.Time) *fakeClock { return testclock.New(t) }

// newTestCA returns a CA generated at t0.
func newTestCA(t testing.TB) *CA {
	t.Helper()
	ca, err := GenerateCA(t0)
	if err != nil {
		t.Fatalf("GenerateCA: %v", err)
	}
	return ca
}

// newTestMinter returns a Minter for a new CA with a fake clock at t0.
func newTestMinter(t testing.TB, opts MinterOptions) (*Minter, *CA, *fakeClock) {
	t.Helper()
	ca := newTestCA(t)
	clock := newFakeClock(t0)
	if opts.Now == nil {
		opts.Now = clock.Now
	}
	m, err := NewMinter(ca, opts)
	if err != nil {
		t.Fatalf("NewMinter: %v", err)
	}
	return m, ca, clock
}

// newRealMinter returns a Minter on the real clock for a CA created now, for
// tests where a real TLS client checks validity against the real time.
func newRealMinter(t testing.TB) *Minter {
	t.Helper()
	ca, err := GenerateCA(time.Now())
	if err != nil {
		t.Fatalf("GenerateCA: %v", err)
	}
	m, err := NewMinter(ca, MinterOptions{})
	if err != nil {
		t.Fatalf("NewMinter: %v", err)
	}
	return m
}

// selfSigned makes a self-signed certificate for key, a CA or not.
func selfSigned(t *testing.T, key crypto.Signer, isCA bool, usage x509.KeyUsage) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(42),
		Subject:               pkix.Name{CommonName: "test"},
		NotBefore:             t0.Add(-time.Hour),
		NotAfter:              t0.Add(24 * time.Hour),
		KeyUsage:              usage,
		BasicConstraintsValid: true,
		IsCA:                  isCA,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatalf("CreateCertificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("ParseCertificate: %v", err)
	}
	return cert
}

func ecKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func rsaKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func pkcs8PEM(t *testing.T, key crypto.Signer) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// writeTestFile writes data to name in dir and returns its path.
func writeTestFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// fileMode returns the permission bits of path.
func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}
