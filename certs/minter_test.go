package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// verifyLeaf checks cert's chain against the CA alone for host at now.
func verifyLeaf(t *testing.T, ca *CA, cert *tls.Certificate, host string, now time.Time) {
	t.Helper()
	if len(cert.Certificate) != 2 {
		t.Fatalf("chain has %d certificates, want leaf + CA", len(cert.Certificate))
	}
	if string(cert.Certificate[1]) != string(ca.Certificate().Raw) {
		t.Error("second certificate of the chain is not the CA")
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if cert.Leaf == nil || !cert.Leaf.Equal(leaf) {
		t.Error("Leaf is not the parsed first certificate")
	}
	opts := x509.VerifyOptions{
		DNSName:     host,
		Roots:       ca.CertPool(),
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if _, err := leaf.Verify(opts); err != nil {
		t.Errorf("chain does not verify for %q: %v", host, err)
	}
}

func TestCertificateSANs(t *testing.T) {
	tests := []struct {
		host     string
		verifyAs string // name a client would verify
		wantDNS  []string
		wantIP   string
	}{
		{host: "example.test", verifyAs: "example.test", wantDNS: []string{"example.test"}},
		{host: "WWW.Example.TEST.", verifyAs: "www.example.test", wantDNS: []string{"www.example.test"}},
		{host: "under_score.example.test", verifyAs: "under_score.example.test", wantDNS: []string{"under_score.example.test"}},
		{host: "xn--bcher-kva.example", verifyAs: "xn--bcher-kva.example", wantDNS: []string{"xn--bcher-kva.example"}},
		{host: "localhost", verifyAs: "localhost", wantDNS: []string{"localhost"}},
		{host: "127.0.0.1", verifyAs: "127.0.0.1", wantIP: "127.0.0.1"},
		{host: "192.0.2.7", verifyAs: "192.0.2.7", wantIP: "192.0.2.7"},
		{host: "::1", verifyAs: "::1", wantIP: "::1"},
		{host: "[2001:DB8::1]", verifyAs: "2001:db8::1", wantIP: "2001:db8::1"},
		{host: "fe80::1%eth0", verifyAs: "fe80::1", wantIP: "fe80::1"},
	}
	m, ca, clock := newTestMinter(t, MinterOptions{})
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			cert, err := m.Certificate(tt.host)
			if err != nil {
				t.Fatalf("Certificate(%q): %v", tt.host, err)
			}
			leaf := cert.Leaf
			if !slices.Equal(leaf.DNSNames, tt.wantDNS) {
				t.Errorf("DNSNames = %q, want %q", leaf.DNSNames, tt.wantDNS)
			}
			switch {
			case tt.wantIP == "" && len(leaf.IPAddresses) != 0:
				t.Errorf("IPAddresses = %v, want none", leaf.IPAddresses)
			case tt.wantIP != "" && (len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.ParseIP(tt.wantIP))):
				t.Errorf("IPAddresses = %v, want [%s]", leaf.IPAddresses, tt.wantIP)
			}
			if leaf.IsCA || !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
				t.Errorf("leaf IsCA=%v ExtKeyUsage=%v", leaf.IsCA, leaf.ExtKeyUsage)
			}
			if !leaf.NotBefore.Equal(t0.Add(-time.Hour)) || !leaf.NotAfter.Equal(t0.Add(DefaultLeafValidity)) {
				t.Errorf("validity %v .. %v, want an hour before %v for %v", leaf.NotBefore, leaf.NotAfter, t0, DefaultLeafValidity)
			}
			verifyLeaf(t, ca, cert, tt.verifyAs, clock.Now())
		})
	}
}

func TestCertificateLongNameHasNoCommonName(t *testing.T) {
	m, ca, clock := newTestMinter(t, MinterOptions{})
	host := strings.Repeat("a", 60) + ".example.test"
	cert, err := m.Certificate(host)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Leaf.Subject.CommonName != "" {
		t.Errorf("CommonName %q longer than 64 characters", cert.Leaf.Subject.CommonName)
	}
	verifyLeaf(t, ca, cert, host, clock.Now())
}

func TestCertificateInvalidHost(t *testing.T) {
	m, _, _ := newTestMinter(t, MinterOptions{})
	for _, host := range []string{
		"",
		".",
		"bad host",
		"ex..ample",
		".example",
		"bücher.example",
		"example.test:443",
		"*.example.test",
		strings.Repeat("a", 64) + ".example",
		strings.Repeat("abcdefghi.", 26),
	} {
		if _, err := m.Certificate(host); !errors.Is(err, ErrInvalidHost) {
			t.Errorf("Certificate(%q) error = %v, want ErrInvalidHost", host, err)
		}
	}
	if n := m.Minted(); n != 0 {
		t.Errorf("minted %d certificates for invalid hosts", n)
	}
}

func TestCertificateCached(t *testing.T) {
	m, _, clock := newTestMinter(t, MinterOptions{})
	first, err := m.Certificate("example.test")
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	for _, host := range []string{"example.test", "Example.Test", "example.test."} {
		again, err := m.Certificate(host)
		if err != nil {
			t.Fatal(err)
		}
		if again != first {
			t.Errorf("Certificate(%q) minted anew instead of using the cache", host)
		}
	}
	if _, err := m.Certificate("other.test"); err != nil {
		t.Fatal(err)
	}
	if m.Minted() != 2 || m.CacheLen() != 2 {
		t.Errorf("Minted = %d, CacheLen = %d; want 2, 2", m.Minted(), m.CacheLen())
	}
}

func TestCertificateRenewal(t *testing.T) {
	m, ca, clock := newTestMinter(t, MinterOptions{Validity: 24 * time.Hour})
	first, err := m.Certificate("example.test")
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		advance time.Duration
		renewed bool
	}{
		{17 * time.Hour, false},
		{time.Hour - time.Second, false}, // 18h - 1s: more than a quarter left
		{time.Second, true},              // 18h: a quarter left
		{time.Hour, false},               // the renewed one is fresh
	}
	prev := first
	minted := uint64(1)
	for i, s := range steps {
		clock.Advance(s.advance)
		cert, err := m.Certificate("example.test")
		if err != nil {
			t.Fatal(err)
		}
		if renewed := cert != prev; renewed != s.renewed {
			t.Fatalf("step %d (now %v): renewed = %v, want %v", i, clock.Now().Sub(t0), renewed, s.renewed)
		}
		if s.renewed {
			minted++
			if !cert.Leaf.NotAfter.After(prev.Leaf.NotAfter) {
				t.Errorf("renewed leaf expires %v, not after %v", cert.Leaf.NotAfter, prev.Leaf.NotAfter)
			}
			verifyLeaf(t, ca, cert, "example.test", clock.Now())
		}
		if m.Minted() != minted {
			t.Errorf("step %d: Minted = %d, want %d", i, m.Minted(), minted)
		}
		prev = cert
	}
}

func TestLeafNeverOutlivesCA(t *testing.T) {
	// A CA created almost ten years ago: it expires two hours after t0.
	ca, err := GenerateCA(t0.AddDate(-10, 0, 0).Add(2 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock(t0)
	m, err := NewMinter(ca, MinterOptions{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := m.Certificate("example.test")
	if err != nil {
		t.Fatal(err)
	}
	if !cert.Leaf.NotAfter.Equal(ca.Certificate().NotAfter) {
		t.Errorf("leaf NotAfter %v, want the CA's %v", cert.Leaf.NotAfter, ca.Certificate().NotAfter)
	}
	clock.Advance(2 * time.Hour)
	if _, err := m.Certificate("example.test"); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("minting after the CA expired: %v, want an error saying so", err)
	}
}

func TestCacheBounded(t *testing.T) {
	m, _, _ := newTestMinter(t, MinterOptions{CacheSize: 2})
	for _, h := range []string{"a.test", "b.test", "c.test", "a.test"} {
		if _, err := m.Certificate(h); err != nil {
			t.Fatal(err)
		}
	}
	if m.CacheLen() != 2 || m.Minted() != 4 {
		t.Errorf("CacheLen = %d, Minted = %d; want 2 and 4 (a.test evicted, then minted again)", m.CacheLen(), m.Minted())
	}
}

func TestConcurrentCertificateMintsOnce(t *testing.T) {
	m, _, _ := newTestMinter(t, MinterOptions{})
	const callers = 200
	var (
		start sync.WaitGroup
		done  sync.WaitGroup
		certs [callers]*tls.Certificate
		errs  [callers]error
	)
	start.Add(1)
	for i := range callers {
		done.Go(func() {
			start.Wait()
			certs[i], errs[i] = m.Certificate("example.test")
		})
	}
	start.Done()
	done.Wait()
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if certs[i] != certs[0] {
			t.Fatalf("caller %d got a different certificate", i)
		}
	}
	if n := m.Minted(); n != 1 {
		t.Errorf("Minted = %d, want exactly 1", n)
	}
}

func TestConcurrentManyHosts(t *testing.T) {
	m, _, _ := newTestMinter(t, MinterOptions{CacheSize: 8})
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			host := fmt.Sprintf("h%d.test", i%16)
			cert, err := m.Certificate(host)
			if err != nil {
				t.Error(err)
				return
			}
			if cert.Leaf.DNSNames[0] != host {
				t.Errorf("got certificate for %v, want %s", cert.Leaf.DNSNames, host)
			}
		})
	}
	wg.Wait()
	if m.CacheLen() > 8 {
		t.Errorf("CacheLen = %d beyond the bound of 8", m.CacheLen())
	}
}

func TestTLSConfigFor(t *testing.T) {
	m, _, _ := newTestMinter(t, MinterOptions{})
	tests := []struct {
		connectHost string
		sni         string
		wantDNS     string
		wantIP      string
		wantErr     bool
	}{
		{connectHost: "example.test:443", sni: "example.test", wantDNS: "example.test"},
		{connectHost: "example.test:443", sni: "", wantDNS: "example.test"},
		{connectHost: "example.test", sni: "", wantDNS: "example.test"},
		{connectHost: "example.test:443", sni: "other.test", wantDNS: "other.test"},
		{connectHost: "127.0.0.1:8443", sni: "", wantIP: "127.0.0.1"},
		{connectHost: "[::1]:443", sni: "", wantIP: "::1"},
		{connectHost: "", sni: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.connectHost+"/"+tt.sni, func(t *testing.T) {
			cfg := m.TLSConfigFor(tt.connectHost)
			if !slices.Equal(cfg.NextProtos, []string{"http/1.1"}) {
				t.Errorf("NextProtos = %q, want only http/1.1", cfg.NextProtos)
			}
			if cfg.MinVersion != tls.VersionTLS12 {
				t.Errorf("MinVersion = %x, want TLS 1.2", cfg.MinVersion)
			}
			cert, err := cfg.GetCertificate(&tls.ClientHelloInfo{ServerName: tt.sni})
			if tt.wantErr {
				if err == nil {
					t.Error("no error without SNI or default host")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantDNS != "" && !slices.Equal(cert.Leaf.DNSNames, []string{tt.wantDNS}) {
				t.Errorf("DNSNames = %q, want [%s]", cert.Leaf.DNSNames, tt.wantDNS)
			}
			if tt.wantIP != "" && (len(cert.Leaf.IPAddresses) != 1 || !cert.Leaf.IPAddresses[0].Equal(net.ParseIP(tt.wantIP))) {
				t.Errorf("IPAddresses = %v, want [%s]", cert.Leaf.IPAddresses, tt.wantIP)
			}
		})
	}
}

func TestGetCertificate(t *testing.T) {
	m, _, _ := newTestMinter(t, MinterOptions{})
	cert, err := m.GetCertificate(&tls.ClientHelloInfo{ServerName: "example.test"})
	if err != nil || cert.Leaf.DNSNames[0] != "example.test" {
		t.Errorf("GetCertificate with SNI: %v", err)
	}
	if _, err := m.GetCertificate(&tls.ClientHelloInfo{}); err == nil {
		t.Error("GetCertificate without SNI and without a default host succeeded")
	}
}

func TestNewMinterOptions(t *testing.T) {
	ca := newTestCA(t)
	tests := []struct {
		opts    MinterOptions
		wantErr bool
	}{
		{MinterOptions{}, false},
		{MinterOptions{CacheSize: 1, Validity: time.Hour}, false},
		{MinterOptions{Validity: MaxLeafValidity}, false},
		{MinterOptions{CacheSize: -1}, true},
		{MinterOptions{Validity: -time.Hour}, true},
		{MinterOptions{Validity: MaxLeafValidity + time.Second}, true},
	}
	for _, tt := range tests {
		_, err := NewMinter(ca, tt.opts)
		if (err != nil) != tt.wantErr {
			t.Errorf("NewMinter(%+v) error = %v, want error %v", tt.opts, err, tt.wantErr)
		}
	}
	if _, err := NewMinter(nil, MinterOptions{}); err == nil {
		t.Error("NewMinter(nil) succeeded")
	}
}

func TestTicketKeyRotation(t *testing.T) {
	var tk ticketKeys
	tk.init(t0)
	first := tk.get(t0)
	if len(first) != 1 {
		t.Fatalf("%d keys at start, want 1", len(first))
	}
	if again := tk.get(t0.Add(ticketKeyRotation - time.Second)); &again[0] != &first[0] {
		t.Error("keys rotated early")
	}
	second := tk.get(t0.Add(ticketKeyRotation))
	if len(second) != 2 || second[1] != first[0] || second[0] == first[0] {
		t.Fatalf("after rotation: %d keys, want a new key followed by the old one", len(second))
	}
	third := tk.get(t0.Add(2 * ticketKeyRotation))
	if len(third) != ticketKeysKept || third[1] != second[0] {
		t.Errorf("after second rotation: %d keys, want %d with the previous key kept", len(third), ticketKeysKept)
	}
	if first[0] != second[1] {
		t.Error("a published key slice was modified")
	}
}

func TestNormalizeHostNoAlloc(t *testing.T) {
	for _, h := range []string{"example.test", "127.0.0.1", "2001:db8::1"} {
		if n := testing.AllocsPerRun(100, func() { _, _ = normalizeHost(h) }); n != 0 {
			t.Errorf("normalizeHost(%q) allocates %v times", h, n)
		}
	}
}
