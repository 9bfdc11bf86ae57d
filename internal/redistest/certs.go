package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// tlsFiles are the PEM files of a TLS server: its CA's certificate, its
// certificate and its key.
type tlsFiles struct{ ca, cert, key string }

// writeTLSFiles makes a CA and a certificate for 127.0.0.1 it signs, valid
// for a day, and writes them to tb's temporary directory.
func writeTLSFiles(tb testing.TB) tlsFiles {
	tb.Helper()
	dir := tb.TempDir()
	caKey, caCert := newCert(tb, nil, nil, &x509.Certificate{
		Subject: pkix.Name{CommonName: "redistest CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign,
	})
	key, cert := newCert(tb, caKey, caCert, &x509.Certificate{
		Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		// Client authentication too: a cluster's nodes (tls-cluster) and a
		// replica (tls-replication) present it when they connect.
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	f := tlsFiles{ca: filepath.Join(dir, "ca.pem"), cert: filepath.Join(dir, "cert.pem"), key: filepath.Join(dir, "key.pem")}
	writePEM(tb, f.ca, "CERTIFICATE", caCert.Raw)
	writePEM(tb, f.cert, "CERTIFICATE", cert.Raw)
	writePEM(tb, f.key, "EC PRIVATE KEY", keyDER)
	return f
}

// newCert makes a key and a certificate from tmpl, signed by parent (self-
// signed when parent is nil).
func newCert(tb testing.TB, parentKey *ecdsa.PrivateKey, parent, tmpl *x509.Certificate) (*ecdsa.PrivateKey, *x509.Certificate) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		tb.Fatal(err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return key, cert
}

// writePEM writes one PEM block to file, readable by the owner only.
func writePEM(tb testing.TB, file, typ string, der []byte) {
	tb.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
}
