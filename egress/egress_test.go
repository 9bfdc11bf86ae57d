package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		ip   string
		want Class
	}{
		{"8.8.8.8", Public},
		{"1.1.1.1", Public},
		{"2606:4700:4700::1111", Public},
		{"0.0.0.0", Unspecified},
		{"::", Unspecified},
		{"127.0.0.1", Loopback},
		{"127.255.0.9", Loopback},
		{"::1", Loopback},
		{"10.1.2.3", Private},
		{"172.16.0.1", Private},
		{"172.31.255.255", Private},
		{"172.32.0.1", Public},
		{"192.168.1.1", Private},
		{"169.254.169.254", LinkLocal},
		{"fe80::1", LinkLocal},
		{"fe80::1%eth0", LinkLocal},
		{"100.64.0.1", CGNAT},
		{"100.127.255.255", CGNAT},
		{"fd00::1", ULA},
		{"fc00::1", ULA},
		{"224.0.0.1", Multicast},
		{"ff02::1", Multicast},
		{"255.255.255.255", Reserved},
		{"192.0.2.1", Reserved},
		{"198.18.0.1", Reserved},
		{"2001:db8::1", Reserved},
		// IPv4 embedded in IPv6 takes the embedded address's class.
		{"::ffff:127.0.0.1", Loopback},
		{"::ffff:169.254.169.254", LinkLocal},
		{"::ffff:8.8.8.8", Public},
		{"64:ff9b::a9fe:a9fe", LinkLocal},                  // NAT64 of 169.254.169.254
		{"64:ff9b::808:808", Public},                       // NAT64 of 8.8.8.8
		{"2002:7f00:1::", Loopback},                        // 6to4 of 127.0.0.1
		{"2002:a00:1::1", Private},                         // 6to4 of 10.0.0.1
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", Loopback}, // Teredo, client 127.0.0.1
		{"64:ff9b:1::1", Private},
		{"::7f00:1", Reserved}, // IPv4-compatible
	}
	for _, tt := range tests {
		if got := Classify(netip.MustParseAddr(tt.ip)); got != tt.want {
			t.Errorf("Classify(%s) = %s, want %s", tt.ip, got, tt.want)
		}
	}
	if got := Classify(netip.Addr{}); got != Unparseable {
		t.Errorf("Classify(zero) = %s", got)
	}
}

// fakeResolver answers every name with fixed addresses: a public-looking
// name that resolves to a forbidden address, as a rebinding attacker would.
type fakeResolver struct{ ips []netip.Addr }

func (r fakeResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return r.ips, nil
}

// recordingDialer records what it is asked to dial and never connects.
type recordingDialer struct {
	mu    sync.Mutex
	addrs []string
}

var errNotConnecting = errors.New("recording dialer never connects")

func (d *recordingDialer) dial(_ context.Context, _, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addrs = append(d.addrs, addr)
	return nil, errNotConnecting
}

func TestGuardRefusesForbiddenAnswersBeforeDialling(t *testing.T) {
	for _, ip := range []string{
		"127.0.0.1", "10.0.0.5", "169.254.169.254", "100.64.1.1", "fd12::1", "fe80::1",
		"224.0.0.1", "0.0.0.0", "::ffff:127.0.0.1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::",
	} {
		rec := &recordingDialer{}
		g := &Guard{BlockPrivate: true, Resolver: fakeResolver{[]netip.Addr{netip.MustParseAddr(ip)}}, Dial: rec.dial}
		_, err := g.DialContext(context.Background(), "tcp", "public.example:80")
		var denied *DeniedError
		if !errors.As(err, &denied) || denied.IP.String() != ip {
			t.Errorf("%s: err = %v, want a DeniedError for it", ip, err)
		}
		if len(rec.addrs) != 0 {
			t.Errorf("%s: dialled %v", ip, rec.addrs)
		}
	}
}

func TestGuardRefusesMixedAnswers(t *testing.T) {
	rec := &recordingDialer{}
	g := &Guard{BlockPrivate: true, Dial: rec.dial, Resolver: fakeResolver{[]netip.Addr{
		netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("127.0.0.1"),
	}}}
	if _, err := g.DialContext(context.Background(), "tcp", "mixed.example:443"); err == nil {
		t.Fatal("a name with one private address was allowed")
	}
	if len(rec.addrs) != 0 {
		t.Errorf("dialled %v", rec.addrs)
	}
}

func TestGuardDialsExactlyTheCheckedAddress(t *testing.T) {
	rec := &recordingDialer{}
	g := &Guard{BlockPrivate: true, Dial: rec.dial, Resolver: fakeResolver{[]netip.Addr{
		netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("2606:2800:21f:cb07:6820:80da:af6b:8b2c"),
	}}}
	_, err := g.DialContext(context.Background(), "tcp", "example.com:443")
	if !errors.Is(err, errNotConnecting) {
		t.Fatalf("err = %v", err)
	}
	want := []string{"93.184.215.14:443", "[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:443"}
	if !slices.Equal(rec.addrs, want) {
		t.Errorf("dialled %v, want the IP literals %v", rec.addrs, want)
	}
}

func TestGuardAllowNetworksAndRealLoopbackDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	blocked := &Guard{BlockPrivate: true}
	if _, err := blocked.DialContext(context.Background(), "tcp", addr); err == nil {
		t.Fatal("loopback allowed with BlockPrivate")
	}
	allowed := &Guard{BlockPrivate: true, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	conn, err := allowed.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatalf("allowed network refused: %v", err)
	}
	conn.Close()
	if err := allowed.Check("x", netip.MustParseAddr("127.0.0.2")); err == nil {
		t.Error("127.0.0.2 allowed by an exception for 127.0.0.1/32")
	}
}
