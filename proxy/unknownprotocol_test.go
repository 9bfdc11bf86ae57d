package proxy

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTunnelUnknownProtocolClosedAndAudited: a client that speaks neither
// TLS nor HTTP inside an intercepted tunnel (here SSH) is cut off, nothing
// reaches the origin, and the CONNECT is audited as unknown-protocol.
func TestTunnelUnknownProtocolClosedAndAudited(t *testing.T) {
	o := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	cfg := testConfig(t, o.Certificate())
	logPath := filepath.Join(t.TempDir(), "audit.log")
	cfg.Log.Audit = logPath
	p := startProxy(t, cfg)
	host := strings.TrimPrefix(o.URL, "https://")

	c := dialProxy(t, p)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	io.WriteString(c, "SSH-2.0-x\r\n")
	rest, err := io.ReadAll(c.r)
	if err != nil && !smugConnEnded(err) {
		t.Fatalf("the proxy did not close the tunnel: %v (read %q)", err, rest)
	}
	if len(rest) > 0 {
		t.Errorf("the proxy answered %q to an SSH banner", rest)
	}

	lines := waitAudit(t, logPath, 1)
	l := lines[0]
	if l["method"] != "CONNECT" || l["decision"] != "unknown-protocol" || !strings.Contains(fmt.Sprint(l["note"]), "SSH-2.0-x") {
		t.Errorf("audit line %v, want a CONNECT with decision unknown-protocol naming the first bytes", l)
	}
	if len(o.seen()) != 0 {
		t.Errorf("the origin received %v", o.seen())
	}
}
