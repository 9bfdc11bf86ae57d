package wire

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// sniffProtoName names a Protocol in failures.
func sniffProtoName(p Protocol) string {
	switch p {
	case ProtoNeedMore:
		return "need-more"
	case ProtoTLS:
		return "tls"
	case ProtoHTTP:
		return "http"
	case ProtoOther:
		return "other"
	}
	return fmt.Sprintf("Protocol(%d)", int(p))
}

func TestSniffProtocol(t *testing.T) {
	token25 := strings.Repeat("A", maxMethodLen+1)
	tests := []struct {
		name string
		in   string
		want Protocol
	}{
		{"empty", "", ProtoNeedMore},
		{"TLS record byte alone", "\x16", ProtoNeedMore},
		{"TLS 1.0 record of a ClientHello", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", ProtoTLS},
		{"TLS ClientHello prefix", "\x16\x03\x01", ProtoTLS},
		{"TLS record, major version 3, any minor", "\x16\x03\x04", ProtoTLS},
		{"handshake byte, not version 3", "\x16\x02\x00", ProtoOther},
		{"handshake byte, then a letter", "\x16GET", ProtoOther},
		{"TLS alert record (not a handshake)", "\x15\x03\x01", ProtoOther},
		{"GET request line", "GET / HTTP/1.1\r\nHost: h\r\n\r\n", ProtoHTTP},
		{"method and space are enough", "GET ", ProtoHTTP},
		{"method without space yet", "GET", ProtoNeedMore},
		{"CONNECT", "CONNECT h:443 HTTP/1.1\r\n\r\n", ProtoHTTP},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", ProtoHTTP},
		{"unregistered token method", "X-MY_METHOD! / HTTP/1.1\r\n", ProtoHTTP},
		{"longest waited-for method", strings.Repeat("M", maxMethodLen) + " /", ProtoHTTP},
		{"SSH banner", "SSH-2.0-OpenSSH_9.6\r\n", ProtoOther},
		// A token and a space: indistinguishable from a method, so the
		// tunnel server gets it (and answers 400 to "EHLO x").
		{"SMTP-like EHLO", "EHLO x\r\n", ProtoHTTP},
		{"25-byte token without space", token25, ProtoOther},
		{"24-byte token without space", token25[:maxMethodLen], ProtoNeedMore},
		{"space first", " GET / HTTP/1.1\r\n", ProtoOther},
		{"CR LF first", "\r\nGET / HTTP/1.1\r\n", ProtoOther},
		{"tab after method", "GET\t/ HTTP/1.1\r\n", ProtoOther},
		{"NUL", "\x00\x00\x00\x00", ProtoOther},
		{"binary", "\xff\xfe\x00\x01", ProtoOther},
		{"non-ASCII letter in method", "G\xc3\x89T / HTTP/1.1\r\n", ProtoOther},
		{"SOCKS5 greeting", "\x05\x01\x00", ProtoOther},
		{"HTTP/2 frame bytes", "\x00\x00\x12\x04\x00", ProtoOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sniffProtocol([]byte(tt.in)); got != tt.want {
				t.Errorf("sniffProtocol(%q) = %s, want %s", tt.in, sniffProtoName(got), sniffProtoName(tt.want))
			}
		})
	}
}

func FuzzSniffProtocol(f *testing.F) {
	for _, seed := range []string{
		"", "\x16", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", "\x16\x02", "GET / HTTP/1.1\r\n\r\n", "CONNECT h:1 HTTP/1.1\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "SSH-2.0-x\r\n", "EHLO x\r\n", strings.Repeat("A", maxMethodLen+1),
		strings.Repeat("A", maxMethodLen) + " ", " GET", "\x00\xff", "G\xc3\x89T ",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := sniffProtocol(b)
		if got < ProtoNeedMore || got > ProtoOther {
			t.Fatalf("sniffProtocol(%q) = %s: not a protocol", b, sniffProtoName(got))
		}
		if got == ProtoNeedMore && len(b) > maxMethodLen+1 {
			t.Fatalf("sniffProtocol(%q) = need-more for %d bytes (decides within %d)", b, len(b), maxMethodLen+1)
		}
		// The first prefix that decides must decide the same as every
		// longer one: sniff acts on the bytes of the first read that tells.
		decided, at := ProtoNeedMore, 0
		for i := 0; i <= len(b); i++ {
			p := sniffProtocol(b[:i])
			switch {
			case decided == ProtoNeedMore:
				decided, at = p, i
			case p != decided:
				t.Fatalf("sniffProtocol(%q) = %s but sniffProtocol(%q) = %s: a decision changed with more bytes", b[:at], sniffProtoName(decided), b[:i], sniffProtoName(p))
			}
		}
		if decided != got {
			t.Fatalf("prefixes decided %s, the whole input %s", sniffProtoName(decided), sniffProtoName(got))
		}
		switch got {
		case ProtoHTTP:
			method, _, ok := bytes.Cut(b, []byte(" "))
			if !ok || len(method) == 0 || len(method) > maxMethodLen || !sniffValidToken(method) {
				t.Fatalf("sniffProtocol(%q) = http, but %q is not a method token followed by a space", b, method)
			}
		case ProtoTLS:
			if len(b) < 2 || b[0] != 0x16 || b[1] != 3 {
				t.Fatalf("sniffProtocol(%q) = tls without a handshake record of version 3", b)
			}
		}
		// A method token followed by a space is HTTP whatever follows.
		if i := bytes.IndexByte(b, ' '); i > 0 && i <= maxMethodLen && sniffValidToken(b[:i]) && got != ProtoHTTP {
			t.Fatalf("sniffProtocol(%q) = %s, want http for the method %q", b, sniffProtoName(got), b[:i])
		}
	})
}

func sniffValidToken(b []byte) bool {
	for _, c := range b {
		if !httpguts.IsTokenRune(rune(c)) {
			return false
		}
	}
	return len(b) > 0
}
