package witness

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// NewHTTPClient is the client that talks to a witness: TLS verified
// against roots (nil: the system's), never through a proxy of the
// environment, every phase bounded.
func NewHTTPClient(roots *x509.CertPool, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	if dial == nil {
		dial = (&net.Dialer{Timeout: sendTimeout}).DialContext
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dial,
			TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout:   sendTimeout,
			ResponseHeaderTimeout: sendTimeout,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Roots returns the system's roots with those of the PEM file added, nil
// (the system's) for "".
func Roots(file string) (*x509.CertPool, error) {
	if file == "" {
		return nil, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("witness CA: %w", err)
	}
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("witness CA %s: no PEM certificate", file)
	}
	return pool, nil
}

// maxReceiptLine bounds one line of a list of receipts.
const maxReceiptLine = 64 << 10

// ReadReceipts reads receipts, one JSON object a line (a witness's list,
// or the file a Client keeps), each of which must verify with the
// witness key pub and be of the log of fingerprint log, and calls fn
// with each. A line that does not is an error naming it.
func ReadReceipts(r io.Reader, pub ed25519.PublicKey, log string, fn func(*Receipt) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxReceiptLine)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var rec Receipt
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return fmt.Errorf("receipt %d: not a receipt: %w", n, err)
		}
		if err := rec.Verify(pub, log); err != nil {
			return fmt.Errorf("receipt %d: %w", n, err)
		}
		if err := fn(&rec); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("receipts: %w", err)
	}
	return nil
}

// FetchReceipts reads the receipts a witness (base URL) holds of the log
// of fingerprint log, through client, as ReadReceipts does.
func FetchReceipts(ctx context.Context, client *http.Client, base, log string, pub ed25519.PublicKey, fn func(*Receipt) error) error {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("witness: %q is not an https:// URL", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/checkpoints"
	u.RawQuery = url.Values{"log": {log}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("witness %s: %s", base, resp.Status)
	}
	return ReadReceipts(resp.Body, pub, log, fn)
}
