// Package socks is the server side of SOCKS5 (RFC 1928) with the
// username/password method (RFC 1929), for a proxy that judges what goes
// through it: the handshake up to the client's request, and the reply. It
// supports CONNECT only, and it is strict: anything but a well-formed
// version 5 message is an error, and it never reads past the client's
// request, so the bytes that follow (a TLS ClientHello, an HTTP request)
// stay on the connection for the caller.
//
// It resolves nothing: a request for a domain name is returned as that
// name, for the caller to check and resolve.
package socks

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
)

// Version is the protocol version of every message (RFC 1928 §3).
const Version = 5

// Authentication methods (RFC 1928 §3).
const (
	MethodNoAuth       byte = 0x00
	MethodUserPass     byte = 0x02 // RFC 1929
	MethodNoAcceptable byte = 0xFF
)

// CmdConnect is the one command supported (RFC 1928 §4).
const CmdConnect byte = 0x01

// Address types (RFC 1928 §5).
const (
	atypIPv4   byte = 0x01
	atypDomain byte = 0x03
	atypIPv6   byte = 0x04
)

// Reply codes (RFC 1928 §6).
const (
	ReplySucceeded           byte = 0x00
	ReplyGeneralFailure      byte = 0x01
	ReplyNotAllowed          byte = 0x02 // connection not allowed by ruleset
	ReplyNetworkUnreachable  byte = 0x03
	ReplyHostUnreachable     byte = 0x04
	ReplyConnectionRefused   byte = 0x05
	ReplyTTLExpired          byte = 0x06
	ReplyCommandNotSupported byte = 0x07
	ReplyAddressNotSupported byte = 0x08
)

// Request is a client's request (RFC 1928 §4): CONNECT to Host (a domain
// name as the client sent it, or an IP address) and Port.
type Request struct {
	Host string
	Port uint16
}

// Addr is the request's host:port.
func (r Request) Addr() string {
	if ip, err := netip.ParseAddr(r.Host); err == nil {
		return netip.AddrPortFrom(ip, r.Port).String()
	}
	return r.Host + ":" + strconv.Itoa(int(r.Port))
}

// Credentials are what a client sent for the username/password method.
type Credentials struct {
	User, Password string
}

// Error is a handshake that failed: Reply, when not zero, is the reply
// code already sent to the client (command or address type not
// supported).
type Error struct {
	Reply byte
	Msg   string
}

// Error says what was wrong with the handshake.
func (e *Error) Error() string { return "socks5: " + e.Msg }

// ErrAuthFailed is a client whose credentials were refused (the client
// was told, RFC 1929 §2).
var ErrAuthFailed = errors.New("socks5: username/password refused")

// Server says how Handshake authenticates clients.
type Server struct {
	// UserPass offers the username/password method to clients that
	// support it (else only "no authentication").
	UserPass bool
	// Check says whether a client's credentials are accepted.
	Check func(Credentials) bool
}

// Handshake runs the server side of SOCKS5 on rw up to the client's
// request: it chooses a method (username/password when the client offers
// it and s.UserPass, else no authentication when the client offers that),
// checks the credentials, and reads the request. It returns the request
// and the credentials (empty without authentication). The caller then
// sends the reply (WriteReply). On failure the client has been told what
// the protocol lets it tell, and the caller closes the connection.
func (s Server) Handshake(rw io.ReadWriter) (Request, Credentials, error) {
	methods, err := readMethods(rw)
	if err != nil {
		return Request{}, Credentials{}, err
	}
	method := chooseMethod(methods, s.UserPass)
	if _, err := rw.Write([]byte{Version, method}); err != nil {
		return Request{}, Credentials{}, err
	}
	var creds Credentials
	switch method {
	case MethodNoAcceptable:
		return Request{}, creds, &Error{Msg: fmt.Sprintf("no acceptable authentication method among %v", methods)}
	case MethodUserPass:
		if creds, err = s.authenticate(rw); err != nil {
			return Request{}, creds, err
		}
	}
	req, err := readRequest(rw)
	return req, creds, err
}

// chooseMethod picks username/password when offered and wanted, else no
// authentication when offered.
func chooseMethod(offered []byte, userPass bool) byte {
	has := func(m byte) bool {
		for _, o := range offered {
			if o == m {
				return true
			}
		}
		return false
	}
	switch {
	case userPass && has(MethodUserPass):
		return MethodUserPass
	case has(MethodNoAuth):
		return MethodNoAuth
	}
	return MethodNoAcceptable
}

// readMethods reads the version identifier/method selection message.
func readMethods(r io.Reader) ([]byte, error) {
	var head [2]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	if head[0] != Version {
		return nil, &Error{Msg: fmt.Sprintf("version %d, want 5", head[0])}
	}
	if head[1] == 0 {
		return nil, &Error{Msg: "no authentication method offered"}
	}
	methods := make([]byte, head[1])
	_, err := io.ReadFull(r, methods)
	return methods, err
}

// authenticate runs the username/password subnegotiation (RFC 1929 §2).
func (s Server) authenticate(rw io.ReadWriter) (Credentials, error) {
	creds, err := readCredentials(rw)
	if err != nil {
		return creds, err
	}
	ok := s.Check != nil && s.Check(creds)
	status := byte(0)
	if !ok {
		status = 1
	}
	if _, err := rw.Write([]byte{1, status}); err != nil {
		return creds, err
	}
	if !ok {
		return creds, ErrAuthFailed
	}
	return creds, nil
}

// readCredentials reads a username/password request: version 1, then the
// user and the password, each 1-255 bytes long.
func readCredentials(r io.Reader) (Credentials, error) {
	var ver [1]byte
	if _, err := io.ReadFull(r, ver[:]); err != nil {
		return Credentials{}, err
	}
	if ver[0] != 1 {
		return Credentials{}, &Error{Msg: fmt.Sprintf("username/password version %d, want 1", ver[0])}
	}
	user, err := readString(r, "user name")
	if err != nil {
		return Credentials{}, err
	}
	pass, err := readString(r, "password")
	return Credentials{User: user, Password: pass}, err
}

// readString reads a length-prefixed string of 1-255 bytes.
func readString(r io.Reader, what string) (string, error) {
	var n [1]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", err
	}
	if n[0] == 0 {
		return "", &Error{Msg: "empty " + what}
	}
	b := make([]byte, n[0])
	_, err := io.ReadFull(r, b)
	return string(b), err
}

// readRequest reads the client's request; a command other than CONNECT or
// an unknown address type is answered (7, 8) and returned as an *Error.
func readRequest(rw io.ReadWriter) (Request, error) {
	var head [4]byte
	if _, err := io.ReadFull(rw, head[:]); err != nil {
		return Request{}, err
	}
	switch {
	case head[0] != Version:
		return Request{}, &Error{Msg: fmt.Sprintf("request version %d, want 5", head[0])}
	case head[2] != 0:
		return Request{}, &Error{Msg: "reserved byte of the request is not 0"}
	case head[1] != CmdConnect:
		return Request{}, refuse(rw, ReplyCommandNotSupported, fmt.Sprintf("command %d is not supported (CONNECT only)", head[1]))
	}
	host, err := readHost(rw, head[3])
	if err != nil {
		return Request{}, err
	}
	var port [2]byte
	if _, err := io.ReadFull(rw, port[:]); err != nil {
		return Request{}, err
	}
	return Request{Host: host, Port: binary.BigEndian.Uint16(port[:])}, nil
}

// readHost reads DST.ADDR of address type atyp.
func readHost(rw io.ReadWriter, atyp byte) (string, error) {
	switch atyp {
	case atypIPv4, atypIPv6:
		b := make([]byte, 4, 16)
		if atyp == atypIPv6 {
			b = b[:16]
		}
		if _, err := io.ReadFull(rw, b); err != nil {
			return "", err
		}
		ip, _ := netip.AddrFromSlice(b)
		return ip.String(), nil
	case atypDomain:
		name, err := readString(rw, "domain name")
		if err != nil {
			return "", err
		}
		for i := 0; i < len(name); i++ {
			if c := name[i]; c <= ' ' || c >= 0x7f {
				return "", refuse(rw, ReplyGeneralFailure, fmt.Sprintf("domain name %q has a byte that is not printable ASCII", name))
			}
		}
		return name, nil
	}
	return "", refuse(rw, ReplyAddressNotSupported, fmt.Sprintf("address type %d is not supported", atyp))
}

// refuse sends a failure reply and returns the *Error that says so.
func refuse(w io.Writer, reply byte, msg string) error {
	WriteReply(w, reply, netip.AddrPort{})
	return &Error{Reply: reply, Msg: msg}
}

// WriteReply sends the reply to a request (RFC 1928 §6): reply (0:
// succeeded) and the address the server bound for the connection
// (0.0.0.0:0 when invalid).
func WriteReply(w io.Writer, reply byte, bound netip.AddrPort) error {
	addr := bound.Addr().Unmap()
	if !addr.IsValid() {
		addr = netip.IPv4Unspecified()
	}
	b := []byte{Version, reply, 0, atypIPv4}
	if addr.Is6() {
		b[3] = atypIPv6
	}
	b = append(b, addr.AsSlice()...)
	b = binary.BigEndian.AppendUint16(b, bound.Port())
	_, err := w.Write(b)
	return err
}
