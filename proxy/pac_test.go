package proxy

import (
	"net"
	"strings"
	"testing"
)

// A proxy that listens on every address names, in its PAC file, the host
// the file was fetched from (the name clients reach this machine by) with
// its port; without a host it says to set pac_proxy rather than guess.
func TestPACNamesTheHostItWasFetchedFrom(t *testing.T) {
	p := startProxy(t, testConfig(t, nil))
	for _, tc := range []struct {
		listen net.IP
		host   string
		want   string
	}{
		{net.IPv4zero, "robotsgate.corp.example", `return "PROXY robotsgate.corp.example:8080";`},
		{net.IPv6unspecified, "2001:db8::1", `return "PROXY [2001:db8::1]:8080";`},
		{net.IPv4(127, 0, 0, 1), "robotsgate.corp.example", `return "PROXY 127.0.0.1:8080";`},
		{net.IPv4zero, "", "set pac_proxy"},
	} {
		p.srv.Listening(&net.TCPAddr{IP: tc.listen, Port: 8080})
		body, err := p.srv.PAC(tc.host)
		got := string(body)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("listening on %s, fetched from %q: %s; want %q", tc.listen, tc.host, got, tc.want)
		}
	}
}
