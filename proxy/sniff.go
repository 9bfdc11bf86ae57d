package proxy

import (
	"net"
	"time"

	"golang.org/x/net/http/httpguts"
)

// tunnelProtocol is what a client speaks inside a CONNECT tunnel, told by
// the first bytes it sends: clients tunnel TLS (https://, wss://) and, some
// of them, plain HTTP (Node's undici, curl -p, ws:// through a proxy).
type tunnelProtocol int

const (
	protoNeedMore tunnelProtocol = iota // the bytes so far do not tell
	protoTLS                            // a TLS handshake record: a ClientHello
	protoHTTP                           // an HTTP/1.x request line
	protoOther                          // anything else: the tunnel is closed
)

// maxMethodLen bounds the request method sniffProtocol waits for: longer
// than any registered method (UPDATEREDIRECTREF, 17).
const maxMethodLen = 24

// sniffProtocol tells what the bytes a client sent first in a tunnel
// begin: a TLS record of type handshake (22) and major version 3 (RFC
// 8446 §5.1), or a method token followed by a space (RFC 9112 §3). It
// needs at most maxMethodLen+1 bytes to decide, and a decision does not
// change with more bytes.
func sniffProtocol(b []byte) tunnelProtocol {
	if len(b) == 0 {
		return protoNeedMore
	}
	if b[0] == 0x16 {
		switch {
		case len(b) < 2:
			return protoNeedMore
		case b[1] == 3:
			return protoTLS
		}
		return protoOther
	}
	for i, c := range b {
		switch {
		case c == ' ' && i > 0:
			return protoHTTP
		case i >= maxMethodLen || !httpguts.IsTokenRune(rune(c)):
			return protoOther
		}
	}
	return protoNeedMore
}

// sniffBuf is how much sniff reads at once: a whole ClientHello usually,
// so the TLS handshake starts from the bytes already read.
const sniffBuf = 1024

// sniff reads from conn until sniffProtocol decides, for at most timeout
// (a client that sends nothing is protoOther). It returns the bytes read,
// which the caller must replay before reading conn again.
func sniff(conn net.Conn, timeout time.Duration) (tunnelProtocol, []byte, error) {
	conn.SetReadDeadline(time.Now().Add(timeout))
	defer conn.SetReadDeadline(time.Time{})
	buf := make([]byte, 0, sniffBuf)
	for {
		n, err := conn.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if p := sniffProtocol(buf); p != protoNeedMore {
			return p, buf, nil
		}
		if err != nil {
			return protoOther, buf, err
		}
	}
}
