package socks

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"testing"
)

// conn is a client's bytes to read and what the server wrote back.
type conn struct {
	in  *bytes.Reader
	out bytes.Buffer
}

func (c *conn) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c *conn) Write(p []byte) (int, error) { return c.out.Write(p) }

// request encodes a client's CONNECT request (the client side, for tests).
func request(cmd, atyp byte, addr []byte, port uint16) []byte {
	b := []byte{Version, cmd, 0, atyp}
	if atyp == atypDomain {
		b = append(b, byte(len(addr)))
	}
	b = append(b, addr...)
	return binary.BigEndian.AppendUint16(b, port)
}

func userPass(user, pass string) []byte {
	b := append([]byte{1, byte(len(user))}, user...)
	return append(append(b, byte(len(pass))), pass...)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

var alice = Server{UserPass: true, Check: func(c Credentials) bool { return c == Credentials{"alice", "s3cret"} }}

func TestHandshake(t *testing.T) {
	const after = "\x16\x03\x01 the client's first bytes"
	domain := request(CmdConnect, atypDomain, []byte("site-a.test"), 443)
	for _, tt := range []struct {
		name    string
		srv     Server
		in      []byte
		want    Request
		creds   Credentials
		wrote   []byte // what the server answered
		wantErr error  // errors.Is, or an *Error with this Reply when wantReply
		reply   byte
	}{
		{"no authentication, a domain name", Server{}, cat([]byte{5, 1, 0}, domain, []byte(after)),
			Request{"site-a.test", 443}, Credentials{}, []byte{5, 0}, nil, 0},
		{"IPv4", Server{}, cat([]byte{5, 1, 0}, request(CmdConnect, atypIPv4, []byte{203, 0, 113, 10}, 80)),
			Request{"203.0.113.10", 80}, Credentials{}, []byte{5, 0}, nil, 0},
		{"IPv6", Server{}, cat([]byte{5, 1, 0}, request(CmdConnect, atypIPv6, netip.MustParseAddr("2001:db8::1").AsSlice(), 443)),
			Request{"2001:db8::1", 443}, Credentials{}, []byte{5, 0}, nil, 0},
		{"username/password accepted", alice, cat([]byte{5, 2, 0, 2}, userPass("alice", "s3cret"), domain, []byte(after)),
			Request{"site-a.test", 443}, Credentials{"alice", "s3cret"}, []byte{5, 2, 1, 0}, nil, 0},
		{"no authentication when the client offers no username/password", alice, cat([]byte{5, 1, 0}, domain),
			Request{"site-a.test", 443}, Credentials{}, []byte{5, 0}, nil, 0},
		{"wrong password refused", alice, cat([]byte{5, 1, 2}, userPass("alice", "guess"), domain),
			Request{}, Credentials{"alice", "guess"}, []byte{5, 2, 1, 1}, ErrAuthFailed, 0},
		{"username/password only, not wanted", Server{}, []byte{5, 1, 2},
			Request{}, Credentials{}, []byte{5, 0xFF}, nil, 0xFF},
		{"BIND is not supported", Server{}, cat([]byte{5, 1, 0}, request(2, atypIPv4, []byte{203, 0, 113, 10}, 80)),
			Request{}, Credentials{}, append([]byte{5, 0}, 5, 7, 0, 1, 0, 0, 0, 0, 0, 0), nil, ReplyCommandNotSupported},
		{"unknown address type", Server{}, cat([]byte{5, 1, 0}, request(CmdConnect, 9, nil, 80)),
			Request{}, Credentials{}, append([]byte{5, 0}, 5, 8, 0, 1, 0, 0, 0, 0, 0, 0), nil, ReplyAddressNotSupported},
		{"reserved byte not 0", Server{}, cat([]byte{5, 1, 0}, []byte{5, 1, 1, 1, 203, 0, 113, 10, 0, 80}),
			Request{}, Credentials{}, []byte{5, 0}, nil, 0xFF},
		{"SOCKS4 refused", Server{}, []byte{4, 1, 0, 80, 203, 0, 113, 10, 0},
			Request{}, Credentials{}, nil, nil, 0xFF},
		{"truncated request", Server{}, cat([]byte{5, 1, 0}, domain[:8]),
			Request{}, Credentials{}, []byte{5, 0}, io.ErrUnexpectedEOF, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &conn{in: bytes.NewReader(tt.in)}
			req, creds, err := tt.srv.Handshake(c)
			var se *Error
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("error %v, want %v", err, tt.wantErr)
			case tt.reply == 0xFF && !errors.As(err, &se):
				t.Errorf("error %v, want an *Error", err)
			case tt.reply != 0 && tt.reply != 0xFF && (!errors.As(err, &se) || se.Reply != tt.reply):
				t.Errorf("error %v, want an *Error with reply %d", err, tt.reply)
			case tt.wantErr == nil && tt.reply == 0 && err != nil:
				t.Errorf("error %v", err)
			}
			if req != tt.want || creds != tt.creds {
				t.Errorf("request %+v, credentials %+v; want %+v, %+v", req, creds, tt.want, tt.creds)
			}
			if !bytes.Equal(c.out.Bytes(), tt.wrote) {
				t.Errorf("the server wrote % x, want % x", c.out.Bytes(), tt.wrote)
			}
			if err == nil {
				if rest, _ := io.ReadAll(c.in); string(rest) != after && len(rest) != 0 {
					t.Errorf("the handshake read into what follows the request: %q left", rest)
				}
			}
		})
	}
}

// The handshake never reads a byte past the client's request.
func TestHandshakeLeavesTheFirstBytesOnTheConnection(t *testing.T) {
	const after = "GET / HTTP/1.1\r\n"
	c := &conn{in: bytes.NewReader(cat([]byte{5, 1, 0}, request(CmdConnect, atypDomain, []byte("site-a.test"), 80), []byte(after)))}
	if _, _, err := (Server{}).Handshake(c); err != nil {
		t.Fatal(err)
	}
	if rest, _ := io.ReadAll(c.in); string(rest) != after {
		t.Errorf("left %q on the connection, want %q", rest, after)
	}
}

func TestWriteReply(t *testing.T) {
	for _, tt := range []struct {
		reply byte
		bound netip.AddrPort
		want  []byte
	}{
		{ReplySucceeded, netip.AddrPort{}, []byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0}},
		{ReplyNotAllowed, netip.MustParseAddrPort("127.0.0.1:1080"), []byte{5, 2, 0, 1, 127, 0, 0, 1, 0x04, 0x38}},
		{ReplySucceeded, netip.MustParseAddrPort("[::1]:1080"), append(append([]byte{5, 0, 0, 4}, netip.IPv6Loopback().AsSlice()...), 0x04, 0x38)},
	} {
		var b bytes.Buffer
		if err := WriteReply(&b, tt.reply, tt.bound); err != nil || !bytes.Equal(b.Bytes(), tt.want) {
			t.Errorf("WriteReply(%d, %v) = % x, %v; want % x", tt.reply, tt.bound, b.Bytes(), err, tt.want)
		}
	}
}

// FuzzHandshake: whatever a client sends, the handshake does not panic; a
// request it accepts reads the same when encoded again, and it reads
// exactly the bytes of the handshake: replayed with other bytes after
// them, those bytes are all left on the connection.
func FuzzHandshake(f *testing.F) {
	f.Add(cat([]byte{5, 1, 0}, request(CmdConnect, atypDomain, []byte("site-a.test"), 443)))
	f.Add(cat([]byte{5, 2, 0, 2}, userPass("alice", "s3cret"), request(CmdConnect, atypIPv4, []byte{1, 2, 3, 4}, 80)))
	f.Add(cat([]byte{5, 1, 0}, request(CmdConnect, atypIPv6, make([]byte, 16), 1)))
	f.Add([]byte{5, 1, 0, 5, 2, 0, 3, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		in = append(in, "TAIL"...)
		c := &conn{in: bytes.NewReader(in)}
		req, _, err := alice.Handshake(c)
		if err != nil {
			return
		}
		read := in[:len(in)-c.in.Len()]
		again := &conn{in: bytes.NewReader(cat(read, []byte("MORE")))}
		if got, _, err := alice.Handshake(again); err != nil || got != req {
			t.Fatalf("the %d bytes read, replayed, give %+v, %v; want %+v", len(read), got, err, req)
		}
		if rest, _ := io.ReadAll(again.in); string(rest) != "MORE" {
			t.Fatalf("the handshake read past its own bytes: %q left, want \"MORE\"", rest)
		}
		atyp, addr := atypDomain, []byte(req.Host)
		if ip, err := netip.ParseAddr(req.Host); err == nil {
			atyp, addr = atypIPv4, ip.AsSlice()
			if ip.Is6() {
				atyp = atypIPv6
			}
		}
		encoded := &conn{in: bytes.NewReader(cat([]byte{5, 1, 0}, request(CmdConnect, atyp, addr, req.Port)))}
		if got, _, err := (Server{}).Handshake(encoded); err != nil || got != req {
			t.Fatalf("request %+v encoded again reads %+v, %v", req, got, err)
		}
	})
}
