package upstream

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/robotsgate/robotsgate/config"
)

// TestParentConnectAnswer: what a blind tunnel's CONNECT through the parent
// makes of the parent's answer, against a scripted parent.
func TestParentConnectAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		wantErr      bool
		status       int    // of the ParentError
		first        string // bytes the tunnel yields first
	}{
		{"200", "HTTP/1.1 200 Connection established\r\n\r\n", false, 0, ""},
		{"200 and the origin speaks first", "HTTP/1.1 200 OK\r\n\r\nSSH-2.0-x\r\n", false, 0, "SSH-2.0-x\r\n"},
		{"407", "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=x\r\nContent-Length: 0\r\n\r\n", true, 407, ""},
		{"503", "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 3\r\n\r\nno\n", true, 503, ""},
		{"garbage", "SSH-2.0-not-a-proxy\r\n", true, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			got := make(chan string, 1)
			go func() {
				defer server.Close()
				br := bufio.NewReader(server)
				req, err := http.ReadRequest(br)
				if err != nil {
					got <- err.Error()
					return
				}
				got <- req.Method + " " + req.RequestURI + " " + req.Header.Get("Proxy-Authorization")
				io.WriteString(server, tc.answer)
				io.Copy(io.Discard, server)
			}()
			p, err := NewParent(config.Upstream{Proxy: "http://u:p@parent.test:3128"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := p.connect(t.Context(), client, "origin.test:443")
			if want := "CONNECT origin.test:443 Basic dTpw"; <-got != want {
				t.Errorf("the parent received something else than %q", want)
			}
			var pe *ParentError
			switch {
			case tc.wantErr != (err != nil):
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			case err != nil && (!errors.As(err, &pe) || pe.Status != tc.status):
				t.Errorf("err %#v, want a ParentError with status %d", err, tc.status)
			case err == nil && tc.first != "":
				buf := make([]byte, len(tc.first))
				if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != tc.first {
					t.Errorf("the tunnel's first bytes: %q %v", buf, err)
				}
			}
		})
	}
}
