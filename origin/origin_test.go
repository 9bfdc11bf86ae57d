package origin

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestParseGivesOneSpellingPerOrigin(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://example.com/x", "http://example.com"},
		{"HTTP://EXAMPLE.com:80/", "http://example.com"},
		{"http://example.com.:80", "http://example.com"},
		{"https://example.com:443", "https://example.com"},
		{"https://example.com:0443", "https://example.com"},
		{"https://example.com:", "https://example.com"},
		{"http://example.com:443", "http://example.com:443"},
		{"https://example.com:80", "https://example.com:80"},
		{"http://user:pw@Example.COM:8080/p?q#f", "http://example.com:8080"},
		{"http://[::1]:8080/", "http://[::1]:8080"},
		{"http://[0:0::1]/", "http://[::1]"},
		{"http://[::FFFF:127.0.0.1]/", "http://[::ffff:127.0.0.1]"},
		{"http://127.0.0.1/", "http://127.0.0.1"},
		{"http://127.1/", "http://127.0.0.1"},
		{"http://0x7f.1/", "http://127.0.0.1"},
		{"http://2130706433/", "http://127.0.0.1"},
		{"http://0177.0.0.1/", "http://127.0.0.1"},
		{"http://bücher.example/", "http://xn--bcher-kva.example"},
		{"http://BÜCHER.example./", "http://xn--bcher-kva.example"},
		{"http://xn--bcher-kva.example/", "http://xn--bcher-kva.example"},
		{"http://my_host.example/", "http://my_host.example"},
		{"http://r3---sn-abc.example/", "http://r3---sn-abc.example"},
		{"http://1.2.3.example/", "http://1.2.3.example"},
	}
	for _, tt := range tests {
		o, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if o.String() != tt.want {
			t.Errorf("Parse(%q) = %s, want %s", tt.in, o, tt.want)
		}
	}
}

func TestParseRejectsWhatIsNoOrigin(t *testing.T) {
	for _, in := range []string{
		"ftp://example.com/", "mailto:a@example.com", "/relative", "http://", "http://:80/",
		"http://example.com:0/", "http://example.com:65536/", "http://example.com:x/",
		"http://exa mple.com/", "http://a..b/", "http://example.com../",
		"http://256.0.0.1/", "http://1.2.3.4.5/", "http://0x100000000/",
		"http://[fe80::1%25eth0]/", "http://[127.0.0.1]/", "http://" + strings.Repeat("a", 64) + ".com/",
		"http://ex\u200dample.com/",
	} {
		if o, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, o)
		} else if !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q): %v does not wrap ErrInvalid", in, err)
		}
	}
}

func TestHostPortAndRobotsURL(t *testing.T) {
	o := Origin{Scheme: "http", Host: "::1", Port: 80}
	if o.HostPort() != "[::1]:80" || o.RobotsURL() != "http://[::1]/robots.txt" {
		t.Errorf("HostPort %q RobotsURL %q", o.HostPort(), o.RobotsURL())
	}
	o = Origin{Scheme: "https", Host: "example.com", Port: 8443}
	if o.HostPort() != "example.com:8443" || o.RobotsURL() != "https://example.com:8443/robots.txt" {
		t.Errorf("HostPort %q RobotsURL %q", o.HostPort(), o.RobotsURL())
	}
}

func TestNewFromConnectAuthority(t *testing.T) {
	o, err := New("https", "Example.com:443")
	if err != nil || o != (Origin{"https", "example.com", 443}) {
		t.Errorf("New = %v, %v", o, err)
	}
}

// FuzzParse checks that the canonical spelling is a fixed point: parsing
// String() gives the same Origin, and the host has no upper case, trailing
// dot or brackets.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"http://Example.COM.:80/x", "https://[::1]:443", "http://127.1", "http://bücher.example", "http://0x7f.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(o.String())
		if err != nil || again != o {
			t.Fatalf("Parse(%q) = %#v; Parse(%q) = %#v, %v", s, o, o.String(), again, err)
		}
		h := o.Host
		if h != strings.ToLower(h) || strings.HasSuffix(h, ".") || strings.ContainsAny(h, "[]%/ ") || o.Port == 0 {
			t.Fatalf("non-canonical %#v", o)
		}
		if a, err := netip.ParseAddr(h); err == nil && a.String() != h {
			t.Fatalf("IP host %q not canonical (%q)", h, a)
		}
	})
}
