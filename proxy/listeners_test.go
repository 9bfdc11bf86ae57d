package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
)

// stoppingListener's Accept fails with an error retrying cannot mend.
type stoppingListener struct{ net.Listener }

func (l stoppingListener) Accept() (net.Conn, error) {
	return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: errors.New("invalid argument")}
}

// A listener that stops for good returns its error (serve logs it; the
// process goes on), and /readyz fails naming it, its up gauge at 0.
func TestAStoppedListenerMakesReadyFail(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	p := startProxy(t, testConfig(t, nil))
	if resp, body := get(t, p.client(), o.URL+"/page"); resp.StatusCode != 200 { // the proxy port serves
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if err := p.srv.Ready(context.Background()); err != nil {
		t.Fatalf("Ready before: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := p.srv.ServeSOCKS(stoppingListener{ln}); err == nil || !strings.Contains(err.Error(), "invalid argument") {
		t.Fatalf("ServeSOCKS: %v, want the permanent error", err)
	}
	err = p.srv.Ready(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the SOCKS5 listener has stopped accepting connections") {
		t.Errorf("Ready after the SOCKS5 listener stopped: %v", err)
	}
	_, m := adminGet(t, startAdmin(t, p), "/metrics")
	if v := metricValue(m, fmt.Sprintf(`robotsgate_listener_up{addr=%q,listener="socks"}`, ln.Addr())); v != "0" {
		t.Errorf("robotsgate_listener_up of the stopped listener: %q, want 0", v)
	}
	if v := metricValue(m, fmt.Sprintf(`robotsgate_listener_up{addr=%q,listener="proxy"}`, p.addr)); v != "1" {
		t.Errorf("robotsgate_listener_up of the proxy port: %q, want 1", v)
	}
}
