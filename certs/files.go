package certs

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// File permissions of the CA files and of the directories made for them.
const (
	certFileMode = 0o644
	keyFileMode  = 0o600
	dirMode      = 0o700
)

// CreateCA generates a new CA (see GenerateCA) and writes it into dir as
// CertFileName (mode 0644) and KeyFileName (PKCS#8 PEM, mode 0600; the file
// is created with that mode, so it is never readable by others). dir is
// created with mode 0700 if missing. Without force, existing files are left
// alone and the error, which wraps fs.ErrExist, names the file and says to
// use -force; with force they are replaced (each atomically, by rename).
func CreateCA(dir string, force bool, now time.Time) (certPath, keyPath string, err error) {
	certPath = filepath.Join(dir, CertFileName)
	keyPath = filepath.Join(dir, KeyFileName)
	if !force {
		if err := refuseExisting(certPath, keyPath); err != nil {
			return "", "", err
		}
	}
	ca, err := GenerateCA(now)
	if err != nil {
		return "", "", err
	}
	if err := writeCA(ca, certPath, keyPath, force); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

// LoadCA reads a CA from a PEM certificate file and a PEM private key file.
// The key may be PKCS#8 ("PRIVATE KEY"), SEC 1 ("EC PRIVATE KEY", as written
// by openssl ecparam, with or without an "EC PARAMETERS" block before it) or
// PKCS#1 ("RSA PRIVATE KEY"); encrypted keys are not supported. The first
// certificate in the certificate file is the CA. Errors name the file at
// fault and say what is wrong with it: unreadable, no PEM block, unparsable,
// not a CA, or a key that does not match the certificate.
func LoadCA(certPath, keyPath string) (*CA, error) {
	cert, err := readCertFile(certPath)
	if err != nil {
		return nil, err
	}
	key, err := readKeyFile(keyPath)
	if err != nil {
		return nil, err
	}
	if err := checkIsCA(cert); err != nil {
		return nil, fmt.Errorf("certs: CA certificate %s: %w", certPath, err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("certs: CA key %s does not match the certificate %s", keyPath, certPath)
	}
	return &CA{cert: cert, signer: key}, nil
}

// EnsureCA is serve's first start: when both files exist it loads them
// (created false); when neither exists it generates a CA and writes it to
// exactly these paths (created true), with the modes of CreateCA and any
// missing directory made with mode 0700; when only one exists it fails,
// naming both, rather than replace the survivor.
func EnsureCA(certPath, keyPath string, now time.Time) (ca *CA, created bool, err error) {
	certExists, err := fileExists(certPath)
	if err != nil {
		return nil, false, err
	}
	keyExists, err := fileExists(keyPath)
	if err != nil {
		return nil, false, err
	}
	switch {
	case certExists && keyExists:
		ca, err := LoadCA(certPath, keyPath)
		return ca, false, err
	case certExists != keyExists:
		return nil, false, onlyOneExists(certPath, keyPath, certExists)
	}
	ca, err = GenerateCA(now)
	if err != nil {
		return nil, false, err
	}
	if err := writeCA(ca, certPath, keyPath, false); err != nil {
		return nil, false, err
	}
	return ca, true, nil
}

// onlyOneExists is EnsureCA's error when one of the two CA files is missing.
func onlyOneExists(certPath, keyPath string, certExists bool) error {
	if certExists {
		return fmt.Errorf("certs: CA certificate %s exists but its key %s is missing; restore the key, or create a new CA with `robotsgate ca init -force` (clients must then trust the new one)", certPath, keyPath)
	}
	return fmt.Errorf("certs: CA key %s exists but its certificate %s is missing; restore the certificate, or create a new CA with `robotsgate ca init -force` (clients must then trust the new one)", keyPath, certPath)
}

// fileExists reports whether path exists; errors other than "does not
// exist" (permission denied on the directory, say) are returned.
func fileExists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("certs: %w", err)
	}
}

// refuseExisting returns an error wrapping fs.ErrExist naming the first of
// paths that exists.
func refuseExisting(paths ...string) error {
	for _, p := range paths {
		exists, err := fileExists(p)
		if err != nil {
			return err
		}
		if exists {
			return existsError(p)
		}
	}
	return nil
}

// existsError is the error for a file CreateCA will not overwrite.
func existsError(path string) error {
	return fmt.Errorf("certs: %s already exists; use -force to replace it: %w", path, fs.ErrExist)
}

// writeCA writes the CA's key and certificate files, making their
// directories (0700) as needed. Without overwrite, files are created
// exclusively and a failure removes what this call created; with overwrite,
// both are first written to temporary files and then renamed into place.
func writeCA(ca *CA, certPath, keyPath string, overwrite bool) error {
	keyPEM, err := ca.keyPEM()
	if err != nil {
		return err
	}
	certPEM := ca.CertPEM()
	for _, p := range []string{keyPath, certPath} {
		if err := os.MkdirAll(filepath.Dir(p), dirMode); err != nil {
			return fmt.Errorf("certs: create directory for %s: %w", p, err)
		}
	}
	if overwrite {
		return replaceFiles([]fileContent{{keyPath, keyPEM, keyFileMode}, {certPath, certPEM, certFileMode}})
	}
	if err := writeExclusive(keyPath, keyPEM, keyFileMode); err != nil {
		return err
	}
	if err := writeExclusive(certPath, certPEM, certFileMode); err != nil {
		_ = os.Remove(keyPath) // created just now by this call
		return err
	}
	return nil
}

// fileContent is one file for replaceFiles to write.
type fileContent struct {
	path string
	data []byte
	mode os.FileMode
}

// replaceFiles writes every file to a temporary file next to it (created
// 0600 by os.CreateTemp, then set to its mode) and, once all are written,
// renames each over its destination.
func replaceFiles(files []fileContent) error {
	temps := make([]string, 0, len(files))
	defer func() {
		for _, t := range temps {
			_ = os.Remove(t) // no-op for temporary files already renamed
		}
	}()
	for _, f := range files {
		tmp, err := writeTemp(f.path, f.data, f.mode)
		if err != nil {
			return err
		}
		temps = append(temps, tmp)
	}
	for i, f := range files {
		if err := os.Rename(temps[i], f.path); err != nil {
			return fmt.Errorf("certs: replace %s: %w", f.path, err)
		}
	}
	return nil
}

// writeTemp writes data to a new temporary file in path's directory with the
// given mode and returns its name.
func writeTemp(path string, data []byte, mode os.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("certs: write %s: %w", path, err)
	}
	if err := fillFile(f, data, mode); err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("certs: write %s: %w", path, err)
	}
	return f.Name(), nil
}

// writeExclusive creates path with mode (failing if it exists) and writes
// data to it; on failure the file is removed.
func writeExclusive(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, fs.ErrExist) {
		return existsError(path)
	}
	if err != nil {
		return fmt.Errorf("certs: create %s: %w", path, err)
	}
	if err := fillFile(f, data, mode); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	return nil
}

// fillFile writes data to f, sets its mode exactly (the umask may have
// narrowed it at creation), syncs and closes it.
func fillFile(f *os.File, data []byte, mode os.FileMode) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readCertFile reads the first CERTIFICATE block of a PEM file.
func readCertFile(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("certs: read CA certificate: %w", err)
	}
	block := findPEM(data, "CERTIFICATE")
	if block == nil {
		return nil, fmt.Errorf("certs: CA certificate %s: no PEM \"CERTIFICATE\" block found", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate %s: %w", path, err)
	}
	return cert, nil
}

// keyBlockTypes are the PEM block types readKeyFile understands.
var keyBlockTypes = []string{"PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY", "ENCRYPTED PRIVATE KEY"}

// readKeyFile reads the first private key block of a PEM file.
func readKeyFile(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("certs: read CA key: %w", err)
	}
	block := findPEM(data, keyBlockTypes...)
	if block == nil {
		return nil, fmt.Errorf("certs: CA key %s: no PEM private key block found (want \"PRIVATE KEY\", \"EC PRIVATE KEY\" or \"RSA PRIVATE KEY\")", path)
	}
	key, err := parseKeyBlock(block)
	if err != nil {
		return nil, fmt.Errorf("certs: CA key %s: %w", path, err)
	}
	return key, nil
}

// findPEM returns the first PEM block in data of one of the types, or nil.
// Blocks of other types (an "EC PARAMETERS" block, say) are skipped.
func findPEM(data []byte, types ...string) *pem.Block {
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			return nil
		}
		for _, t := range types {
			if block.Type == t {
				return block
			}
		}
		data = rest
	}
}

// parseKeyBlock decodes a private key PEM block into a signer.
func parseKeyBlock(block *pem.Block) (crypto.Signer, error) {
	if block.Type == "ENCRYPTED PRIVATE KEY" || block.Headers["Proc-Type"] != "" {
		return nil, errors.New("encrypted private keys are not supported; decrypt it first (openssl pkey -in KEY -out KEY.dec)")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("parse %q block: %w", block.Type, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
	return signer, nil
}
