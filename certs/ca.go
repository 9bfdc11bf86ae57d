package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// File names CreateCA writes inside its directory.
const (
	CertFileName = "ca.pem"
	KeyFileName  = "ca-key.pem"
)

// CACommonName is the subject common name of CAs made by GenerateCA; it is
// what users see in their trust stores.
const CACommonName = "robotsgate interception CA"

// CA validity: NotBefore is backdated by caBackdate to tolerate clocks that
// run slightly behind, NotAfter is caValidityYears after creation.
const (
	caBackdate       = time.Hour
	caValidityYears  = 10
	serialNumberBits = 128
)

// CA is a certificate authority able to sign leaf certificates: a CA
// certificate and the private key matching it. A CA is immutable and safe for
// concurrent use.
type CA struct {
	cert   *x509.Certificate
	signer crypto.Signer
}

// GenerateCA creates a new CA in memory: an ECDSA P-256 key and a self-signed
// certificate named CACommonName, with a random 128-bit serial, key usage
// certSign, cRLSign and digitalSignature, basic constraints CA:TRUE with
// pathlen 0 (it signs leaves only), valid from an hour before now for ten
// years. CreateCA and EnsureCA write it to files.
func GenerateCA(now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: generate CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: CACommonName, Organization: []string{"robotsgate"}},
		NotBefore:             now.Add(-caBackdate),
		NotAfter:              now.AddDate(caValidityYears, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("certs: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: parse new CA certificate: %w", err)
	}
	return &CA{cert: cert, signer: key}, nil
}

// NewCA pairs a CA certificate with its private key. It fails when the
// certificate is not a CA (basic constraints CA:TRUE missing, or a key usage
// without certSign) or when the key does not match the certificate's public
// key.
func NewCA(cert *x509.Certificate, key crypto.Signer) (*CA, error) {
	if cert == nil || key == nil {
		return nil, errors.New("certs: NewCA: nil certificate or key")
	}
	if err := checkIsCA(cert); err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, errors.New("certs: private key does not match the CA certificate's public key")
	}
	return &CA{cert: cert, signer: key}, nil
}

// Certificate returns the CA certificate. Callers must not modify it.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// CertPEM returns the CA certificate PEM-encoded, as written to ca.pem: what
// clients need to trust the CA.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// CertPool returns a new pool holding only the CA certificate, for clients
// (tests, tools) that should trust this CA and nothing else.
func (ca *CA) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// keyPEM returns the CA private key as a PKCS#8 "PRIVATE KEY" PEM block.
func (ca *CA) keyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.signer)
	if err != nil {
		return nil, fmt.Errorf("certs: encode CA key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// checkIsCA reports why cert cannot sign leaves, or nil if it can.
func checkIsCA(cert *x509.Certificate) error {
	if !cert.BasicConstraintsValid || !cert.IsCA {
		return errors.New("not a CA certificate (basic constraints CA:TRUE missing)")
	}
	if cert.KeyUsage != 0 && cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return errors.New("key usage does not allow signing certificates (certSign missing)")
	}
	return nil
}

// publicKeysEqual reports whether two public keys are the same key.
func publicKeysEqual(a, b crypto.PublicKey) bool {
	ka, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ka.Equal(b)
}

// randomSerial returns a random positive serial number of serialNumberBits.
func randomSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), serialNumberBits)
	n, err := rand.Int(rand.Reader, limit)
	if err != nil {
		return nil, fmt.Errorf("certs: generate serial number: %w", err)
	}
	if n.Sign() == 0 { // a serial must be positive; 0 has probability 2^-128
		n.SetInt64(1)
	}
	return n, nil
}
