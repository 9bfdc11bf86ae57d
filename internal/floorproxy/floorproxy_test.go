package floorproxy

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/certs"
)

// The floor forwards a plain HTTP request in absolute form and an
// intercepted HTTPS one, each answered by the origin (not by the floor),
// hop-by-hop fields removed; without a minter it refuses CONNECT.
func TestFloorForwardsPlainAndInterceptedRequests(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Connection") != "" || r.Header.Get("X-Hop") != "" {
			t.Errorf("hop-by-hop fields reached the origin: %v", r.Header)
		}
		io.WriteString(w, "origin:"+r.URL.Path)
	})
	plainOrigin := httptest.NewServer(handler)
	defer plainOrigin.Close()
	tlsOrigin := httptest.NewTLSServer(handler)
	defer tlsOrigin.Close()
	originRoots := x509.NewCertPool()
	originRoots.AddCert(tlsOrigin.Certificate())

	floorCA, err := certs.GenerateCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	floorMinter, err := certs.NewMinter(floorCA, certs.MinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	upstream := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: originRoots}}
	defer upstream.CloseIdleConnections()
	for _, tc := range []struct {
		name   string
		minter *certs.Minter
		target string
		want   string // body; "" when the request must fail
	}{
		{"plain", floorMinter, plainOrigin.URL + "/plain", "origin:/plain"},
		{"intercepted", floorMinter, tlsOrigin.URL + "/tls", "origin:/tls"},
		{"CONNECT without a minter", nil, tlsOrigin.URL + "/tls", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(upstream, tc.minter)
			defer p.Close()
			srv := httptest.NewServer(p)
			defer srv.Close()
			proxyURL, _ := url.Parse(srv.URL)
			client := &http.Transport{
				Proxy:           http.ProxyURL(proxyURL),
				TLSClientConfig: &tls.Config{RootCAs: floorCA.CertPool()},
				DialContext:     (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			}
			defer client.CloseIdleConnections()
			req, _ := http.NewRequest(http.MethodGet, tc.target, nil)
			req.Header.Set("Connection", "X-Hop")
			req.Header.Set("X-Hop", "1")
			resp, err := (&http.Client{Transport: client, Timeout: 10 * time.Second}).Do(req)
			if tc.want == "" {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("CONNECT through a floor without a minter answered %d", resp.StatusCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(body) != tc.want {
				t.Errorf("%d %q, want 200 %q", resp.StatusCode, body, tc.want)
			}
		})
	}
}
