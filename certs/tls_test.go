package certs

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// serveTLS listens on the loopback address listen and, for each
// connection, does a TLS handshake with a config from newConfig (called per
// connection, as goproxy asks for one per CONNECT) and writes "ok". It
// returns the listener's address.
func serveTLS(t *testing.T, listen string, newConfig func() *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func(cfg *tls.Config) {
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				srv := tls.Server(conn, cfg)
				if srv.Handshake() == nil {
					_, _ = srv.Write([]byte("ok"))
				}
			}(newConfig())
		}
	}()
	return ln.Addr().String()
}

// dialTLS connects to addr with cfg, reads the server's "ok" (which also
// processes any session ticket) and returns the connection state.
func dialTLS(t *testing.T, addr string, cfg *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(dialer, "tcp", addr, cfg)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	buf, err := io.ReadAll(conn)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	if string(buf) != "ok" {
		return tls.ConnectionState{}, errors.New("server sent " + string(buf))
	}
	return conn.ConnectionState(), nil
}

func TestTLSHandshakeEndToEnd(t *testing.T) {
	m := newRealMinter(t)
	tests := []struct {
		name        string
		connectHost string // the CONNECT authority the proxy would pass
		serverName  string // what the client verifies (and sends as SNI unless an IP)
	}{
		{"SNI name", "example.test:443", "example.test"},
		{"SNI overrides CONNECT host", "127.0.0.1:443", "example.test"},
		{"no SNI IPv4", "127.0.0.1:443", "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := serveTLS(t, "127.0.0.1:0", func() *tls.Config { return m.TLSConfigFor(tt.connectHost) })
			cs, err := dialTLS(t, addr, &tls.Config{
				RootCAs:    m.ca.CertPool(),
				ServerName: tt.serverName,
				NextProtos: []string{"h2", "http/1.1"},
			})
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			if cs.NegotiatedProtocol != "http/1.1" {
				t.Errorf("ALPN = %q, want http/1.1", cs.NegotiatedProtocol)
			}
			if got := cs.PeerCertificates[0].Issuer.CommonName; got != CACommonName {
				t.Errorf("leaf issued by %q", got)
			}
		})
	}
}

func TestTLSHandshakeIPv6NoSNI(t *testing.T) {
	m := newRealMinter(t)
	ln, err := net.Listen("tcp", "[::1]:0")
	switch {
	case errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT):
		// A machine (a container, typically) may run with IPv6 disabled:
		// then there is no ::1 to test on. .ci/allowed-skips lists this
		// skip; any other error is a failure.
		t.Skipf("no IPv6 loopback on this machine (enable it with sysctl net.ipv6.conf.lo.disable_ipv6=0): %v", err)
	case err != nil:
		t.Fatalf("listen on [::1]: %v", err)
	}
	_ = ln.Close()
	addr := serveTLS(t, "[::1]:0", func() *tls.Config { return m.TLSConfigFor("[::1]:443") })
	if _, err := dialTLS(t, addr, &tls.Config{RootCAs: m.ca.CertPool(), ServerName: "::1"}); err != nil {
		t.Fatalf("handshake: %v", err)
	}
}

func TestTLSHandshakeUntrustedClientFails(t *testing.T) {
	m := newRealMinter(t)
	addr := serveTLS(t, "127.0.0.1:0", func() *tls.Config { return m.TLSConfigFor("example.test:443") })
	other := newRealMinter(t).ca
	if _, err := dialTLS(t, addr, &tls.Config{RootCAs: other.CertPool(), ServerName: "example.test"}); err == nil {
		t.Fatal("a client trusting another CA accepted the leaf")
	}
}

func TestTLSSessionResumptionAcrossConfigs(t *testing.T) {
	m := newRealMinter(t)
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(version), func(t *testing.T) {
			// A fresh config per connection, as goproxy makes.
			addr := serveTLS(t, "127.0.0.1:0", func() *tls.Config { return m.TLSConfigFor("example.test:443") })
			client := &tls.Config{
				RootCAs:            m.ca.CertPool(),
				ServerName:         "example.test",
				MaxVersion:         version,
				ClientSessionCache: tls.NewLRUClientSessionCache(8),
			}
			first, err := dialTLS(t, addr, client)
			if err != nil {
				t.Fatal(err)
			}
			second, err := dialTLS(t, addr, client)
			if err != nil {
				t.Fatal(err)
			}
			if first.DidResume || !second.DidResume {
				t.Errorf("DidResume = %v then %v, want false then true", first.DidResume, second.DidResume)
			}
		})
	}
}
