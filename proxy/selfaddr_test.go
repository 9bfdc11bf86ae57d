package proxy

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	xproxy "golang.org/x/net/proxy"
)

// Every listener is one of robotsgate's own addresses for the egress
// guard: a SOCKS5 CONNECT, and a request on the proxy port, to the proxy
// port, the SOCKS5, transparent or admin listener is refused, so that no
// listener is reached through another (a loop, or the admin listener
// read through the proxy).
func TestEveryListenerIsRefusedAsADestination(t *testing.T) {
	p := startProxy(t, testConfig(t, nil))
	socksAddr := startSOCKS(t, p)
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.srv.ServeTransparent(p.srv.Guard(tl, "transparent")) // guarded at once: no window before ServeTransparent runs
	t.Cleanup(func() { tl.Close() })
	al, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	admin := &http.Server{Handler: p.srv.AdminHandler()}
	go admin.Serve(p.srv.Guard(al, "admin"))
	t.Cleanup(func() { admin.Close() })

	d, err := xproxy.SOCKS5("tcp", socksAddr, nil, &net.Dialer{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ name, addr string }{
		{"the SOCKS5 listener", socksAddr},
		{"the proxy port", p.addr},
		{"the transparent listener", tl.Addr().String()},
		{"the admin listener", al.Addr().String()},
	} {
		t.Run(l.name, func(t *testing.T) {
			c, err := d.Dial("tcp", l.addr)
			if err == nil {
				c.Close()
				t.Errorf("SOCKS5 CONNECT to %s (%s) was accepted", l.name, l.addr)
			} else if !strings.Contains(err.Error(), "not allowed") {
				t.Errorf("SOCKS5 CONNECT to %s: %v, want not allowed by ruleset", l.name, err)
			}
			resp, body := get(t, p.client(), "http://"+l.addr+"/")
			if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Robotsgate-Decision") != "egress-denied" {
				t.Errorf("GET http://%s/ through the proxy: %d %s %q, want 403 egress-denied",
					l.addr, resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision"), body)
			}
		})
	}
}
