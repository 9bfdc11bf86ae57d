package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"net"
	"strconv"
	"testing"
)

// BenchmarkCertificateCached is the per-connection cost of a host already
// minted: normalisation plus an LRU lookup.
func BenchmarkCertificateCached(b *testing.B) {
	m, _, _ := newTestMinter(b, MinterOptions{})
	if _, err := m.Certificate("example.test"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Certificate("example.test"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCertificateCachedParallel is BenchmarkCertificateCached from all
// Ps at once, on a few hosts (contention on the LRU's lock).
func BenchmarkCertificateCachedParallel(b *testing.B) {
	m, _, _ := newTestMinter(b, MinterOptions{})
	hosts := []string{"a.test", "b.test", "c.test", "d.test"}
	for _, h := range hosts {
		if _, err := m.Certificate(h); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			if _, err := m.Certificate(hosts[i%len(hosts)]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkMintNew mints a certificate for a new host on every operation.
func BenchmarkMintNew(b *testing.B) {
	m, _, _ := newTestMinter(b, MinterOptions{})
	hosts := make([]string, 0, 1<<16)
	for i := range cap(hosts) {
		hosts = append(hosts, "h"+strconv.Itoa(i)+".example.test")
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(hosts) { // b.N beyond the prepared hosts: start a new Minter
			b.StopTimer()
			m, _, _ = newTestMinter(b, MinterOptions{})
			i = 0
			b.StartTimer()
		}
		if _, err := m.Certificate(hosts[i]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	if m.Minted() == 0 {
		b.Fatal("nothing minted")
	}
}

// BenchmarkLeafKeyGeneration is what a key per leaf would add to every
// mint, for comparison with BenchmarkMintNew.
func BenchmarkLeafKeyGeneration(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandshakeCached is a full TLS 1.3 handshake (no resumption) over
// an in-memory pipe with a cached certificate, client and server side both:
// the CPU cost of one new intercepted connection.
func BenchmarkHandshakeCached(b *testing.B) {
	m := newRealMinter(b)
	ca := m.ca
	client := &tls.Config{RootCAs: ca.CertPool(), ServerName: "example.test"}
	b.ReportAllocs()
	for b.Loop() {
		c, s := net.Pipe()
		errc := make(chan error, 1)
		go func() {
			errc <- tls.Server(s, m.TLSConfigFor("example.test:443")).Handshake()
			_ = s.Close()
		}()
		if err := tls.Client(c, client).Handshake(); err != nil {
			b.Fatal(err)
		}
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
	}
}
