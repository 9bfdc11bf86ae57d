package wire

import (
	"net"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Protocol is what a client speaks inside a CONNECT or SOCKS5 tunnel (or
// on a connection redirected to a transparent listener), told by the first
// bytes it sends: clients tunnel TLS (https://, wss://) and, some of them,
// plain HTTP (Node's undici, curl -p, ws:// through a proxy).
type Protocol int

// The protocols Sniff tells apart.
const (
	ProtoNeedMore Protocol = iota // the bytes so far do not tell
	ProtoTLS                      // a TLS handshake record: a ClientHello
	ProtoHTTP                     // an HTTP/1.x request line
	ProtoOther                    // anything else: the tunnel is closed
)

// maxMethodLen bounds the request method sniffProtocol waits for: longer
// than any registered method (UPDATEREDIRECTREF, 17).
const maxMethodLen = 24

// sniffProtocol tells what the bytes a client sent first in a tunnel
// begin: a TLS record of type handshake (22) and major version 3 (RFC
// 8446 §5.1), or a method token followed by a space (RFC 9112 §3). It
// needs at most maxMethodLen+1 bytes to decide, and a decision does not
// change with more bytes.
func sniffProtocol(b []byte) Protocol {
	if len(b) == 0 {
		return ProtoNeedMore
	}
	if b[0] == 0x16 {
		switch {
		case len(b) < 2:
			return ProtoNeedMore
		case b[1] == 3:
			return ProtoTLS
		}
		return ProtoOther
	}
	for i, c := range b {
		switch {
		case c == ' ' && i > 0:
			return ProtoHTTP
		case i >= maxMethodLen || !httpguts.IsTokenRune(rune(c)):
			return ProtoOther
		}
	}
	return ProtoNeedMore
}

// sniffBuf is how much Sniff reads at once: a whole ClientHello usually,
// so the TLS handshake starts from the bytes already read.
const sniffBuf = 1024

// Sniff reads from conn until its first bytes tell what the client speaks
// (the first 25 bytes always decide), for at most timeout: a client
// that sends nothing, or too little before an error, is ProtoOther, with
// the read error. It returns the bytes read, which the caller must replay
// (WithPrefix) before reading conn again, and leaves conn without a read
// deadline.
func Sniff(conn net.Conn, timeout time.Duration) (Protocol, []byte, error) {
	conn.SetReadDeadline(time.Now().Add(timeout))
	defer conn.SetReadDeadline(time.Time{})
	buf := make([]byte, 0, sniffBuf)
	for {
		n, err := conn.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if p := sniffProtocol(buf); p != ProtoNeedMore {
			return p, buf, nil
		}
		if err != nil {
			return ProtoOther, buf, err
		}
	}
}
