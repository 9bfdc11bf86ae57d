package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// startEchoUpgradeOrigin answers an Upgrade request with 101 and then echoes
// every byte, like a WebSocket echo server without framing.
func startEchoUpgradeOrigin(t *testing.T, ip string, tlsOn bool) *testOrigin {
	o := startOrigin(t, ip, tlsOn, testRobots, 0)
	o.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, testRobots)
			return
		}
		o.mu.Lock()
		o.targets = append(o.targets, r.RequestURI)
		o.mu.Unlock()
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "upgrade required", http.StatusUpgradeRequired)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		io.Copy(conn, brw)
	})
	return o
}

func upgradeRequest(target, host string) string {
	return fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", target, host)
}

// echoRoundTrip sends an upgrade, expects 101, then checks bytes come back.
func echoRoundTrip(t *testing.T, c *rawConn, raw string) {
	t.Helper()
	io.WriteString(c, raw)
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	io.WriteString(c, "ping-frame\n")
	line, err := bufio.NewReader(c.r).ReadString('\n')
	if err != nil || line != "ping-frame\n" {
		t.Fatalf("echo through the upgraded connection: %q %v", line, err)
	}
}

// Upgrades in absolute form are judged like GETs of their URL; a
// WebSocket URL (aiohttp sends "GET ws://host/path") is judged as the
// http:// URL it names (regression: 400 "no valid http or https origin").
func TestWebSocketUpgradesPassAndAreJudged(t *testing.T) {
	o := startEchoUpgradeOrigin(t, "127.0.0.2", false)
	p := startProxy(t, testConfig(t, nil))
	host := strings.TrimPrefix(o.URL, "http://")
	for _, scheme := range []string{"http", "ws"} {
		echoRoundTrip(t, dialProxy(t, p), upgradeRequest(scheme+"://"+host+"/socket", host))
		resp, _ := dialProxy(t, p).roundTrip(t, upgradeRequest(scheme+"://"+host+"/private/socket", host))
		checkRefusal(t, resp, 403, "disallow", "http_request_denied")
	}
	if o.saw("/private/socket") {
		t.Error("the disallowed upgrade reached the origin")
	}
}

func TestWebSocketUpgradeInsideTunnel(t *testing.T) {
	o := startEchoUpgradeOrigin(t, "127.0.0.1", true)
	p := startProxy(t, testConfig(t, o.Certificate()))
	host := strings.TrimPrefix(o.URL, "https://")
	echoRoundTrip(t, dialProxy(t, p).connect(t, p, host, "127.0.0.1"), upgradeRequest("/socket", host))
	tc := dialProxy(t, p).connect(t, p, host, "127.0.0.1")
	resp, _ := tc.roundTrip(t, upgradeRequest("/private/socket", host))
	checkRefusal(t, resp, 403, "disallow", "http_request_denied")
}
