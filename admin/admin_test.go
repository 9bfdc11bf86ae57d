package admin

import "testing"

func TestConnectTarget(t *testing.T) {
	for u, want := range map[string]string{
		"https://example.com":    "example.com:443 (CONNECT)", // judged: the origin, 443 not written
		"https://example.com/":   "example.com:443 (CONNECT)", // intercepted
		"https://127.0.0.1:8443": "127.0.0.1:8443 (CONNECT)",
		"https://[2001:db8::1]":  "[2001:db8::1]:443 (CONNECT)",
		"//127.0.0.9:443":        "127.0.0.9:443 (CONNECT)", // refused before it was judged
		"//[2001:db8::1]:8443":   "[2001:db8::1]:8443 (CONNECT)",
		"//not a host":           "not a host (CONNECT)",
	} {
		if got := ConnectTarget(u); got != want {
			t.Errorf("ConnectTarget(%q) = %q, want %q", u, got, want)
		}
	}
}
