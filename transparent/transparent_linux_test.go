package transparent

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/internal/netnstest"
)

// A connection REDIRECTed to a listener tells where its client connected,
// over IPv4 and IPv6; one that was not redirected tells the listener's own
// address.
func TestOriginalDstOfRedirectedConnections(t *testing.T) {
	ns := netnstest.New(t, "203.0.113.10", "2001:db8::10")
	ns.Nft(t, `table inet rgredirect {
  chain output {
    type nat hook output priority -100; policy accept;
    ip daddr 203.0.113.10 tcp dport 80 redirect to :18080
    ip6 daddr 2001:db8::10 tcp dport 443 redirect to :18080
  }
}`)
	ln := ns.Listen(t, "[::]:18080")
	defer ln.Close()
	for _, tc := range []struct {
		dial, want string
	}{
		{"203.0.113.10:80", "203.0.113.10:80"},
		{"[2001:db8::10]:443", "[2001:db8::10]:443"},
		{"127.0.0.1:18080", "127.0.0.1:18080"}, // not redirected
	} {
		t.Run(tc.dial, func(t *testing.T) {
			c, err := ns.Dial(tc.dial)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			server, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer server.Close()
			got, err := OriginalDst(server)
			if err != nil || got != netip.MustParseAddrPort(tc.want) {
				t.Errorf("OriginalDst = %v, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// A marked dialer's connections carry the mark: a rule that refuses
// unmarked connections lets them through.
func TestMarkedDialerMarksConnections(t *testing.T) {
	ns := netnstest.New(t, "203.0.113.10")
	ns.Nft(t, `table inet marktest {
  chain output {
    type filter hook output priority 0; policy accept;
    ip daddr 203.0.113.10 tcp dport 80 meta mark != 0x2a reject with tcp reset
  }
}`)
	ln := ns.Listen(t, "203.0.113.10:80")
	defer ln.Close()
	for _, tc := range []struct {
		name string
		mark uint32
		ok   bool
	}{{"marked", 0x2a, true}, {"unmarked", 0, false}, {"another mark", 7, false}} {
		t.Run(tc.name, func(t *testing.T) {
			var c net.Conn
			err := ns.Do(func() error {
				var err error
				d := &net.Dialer{}
				if tc.mark != 0 {
					d = MarkedDialer(tc.mark, 0)
				}
				c, err = d.Dial("tcp", "203.0.113.10:80")
				return err
			})
			if c != nil {
				c.Close()
			}
			if (err == nil) != tc.ok {
				t.Errorf("dial: %v, want success %v", err, tc.ok)
			}
			if err != nil && tc.ok == false && !strings.Contains(err.Error(), "refused") {
				t.Errorf("dial failed otherwise than refused: %v", err)
			}
		})
	}
}
