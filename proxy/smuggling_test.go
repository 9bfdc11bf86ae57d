package proxy

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/wire"
)

// The request-smuggling suite sends crafted requests as raw bytes through
// the proxy, on the proxy port (absolute-form), inside an intercepted TLS
// tunnel and inside a plain-HTTP CONNECT tunnel (origin-form), to a raw
// origin that records every byte it receives and every request it parses.
// Whatever the bytes, the origin must never receive a request the proxy did
// not judge and allow, a request-target under /private, or the bytes of a
// refused request; and the client must get a proper answer, not a hang.

// smugOrigin is an HTTP/1.1 origin on a loopback address written on the
// bare connection: it keeps every byte received, per connection, and
// answers each request http.ReadRequest can parse, before reading its body.
// /switch answers 101 (Upgrade: h2c) whatever the request asked, and
// /switch-bare a 101 without Upgrade fields; both then only record what
// comes. A request with an Upgrade field gets a plain 426.
type smugOrigin struct {
	addr string
	ln   net.Listener
	wg   sync.WaitGroup

	mu    sync.Mutex
	conns []*smugOriginConn
}

type smugOriginConn struct {
	c          net.Conn
	raw        []byte
	requests   []smugOriginRequest
	unparsable []string
}

type smugOriginRequest struct{ method, target, host string }

const smugOriginRobots = "User-agent: *\nDisallow: /private\n"

func startSmugOrigin(t *testing.T, ip string, cert *tls.Certificate) *smugOrigin {
	t.Helper()
	if !strings.HasPrefix(ip, "127.0.0.") {
		t.Fatalf("raw origins listen on 127.0.0.x only, not %s", ip)
	}
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	o := &smugOrigin{addr: ln.Addr().String(), ln: ln}
	if cert != nil {
		o.ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*cert}, NextProtos: []string{"http/1.1"}})
	}
	o.wg.Add(1)
	go o.accept()
	t.Cleanup(func() {
		o.ln.Close()
		o.mu.Lock()
		for _, rc := range o.conns {
			rc.c.Close()
		}
		o.mu.Unlock()
		o.wg.Wait()
	})
	return o
}

func (o *smugOrigin) accept() {
	defer o.wg.Done()
	for {
		c, err := o.ln.Accept()
		if err != nil {
			return
		}
		rc := &smugOriginConn{c: c}
		o.mu.Lock()
		o.conns = append(o.conns, rc)
		o.mu.Unlock()
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			o.serve(rc)
		}()
	}
}

// smugRecorder appends what the origin reads to its connection's record.
type smugRecorder struct {
	o  *smugOrigin
	rc *smugOriginConn
}

func (r smugRecorder) Write(p []byte) (int, error) {
	r.o.mu.Lock()
	r.rc.raw = append(r.rc.raw, p...)
	r.o.mu.Unlock()
	return len(p), nil
}

func (o *smugOrigin) serve(rc *smugOriginConn) {
	c := rc.c
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(io.TeeReader(c, smugRecorder{o, rc}))
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			if !smugConnEnded(err) {
				o.mu.Lock()
				rc.unparsable = append(rc.unparsable, err.Error())
				o.mu.Unlock()
			}
			return
		}
		o.mu.Lock()
		rc.requests = append(rc.requests, smugOriginRequest{req.Method, req.RequestURI, req.Host})
		o.mu.Unlock()
		switch {
		case req.URL.Path == "/robots.txt":
			smugWriteResponse(c, "200 OK", smugOriginRobots)
		case req.URL.Path == "/switch" || req.URL.Path == "/switch-bare":
			if req.URL.Path == "/switch" {
				io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n")
			} else {
				io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\n\r\n")
			}
			io.Copy(io.Discard, br) // another protocol now: only recorded
			return
		case req.Header.Get("Upgrade") != "":
			smugWriteResponse(c, "426 Upgrade Required", "no upgrade here")
		default:
			smugWriteResponse(c, "200 OK", "target="+req.RequestURI)
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil || req.Close {
			return
		}
	}
}

func smugWriteResponse(c net.Conn, status, body string) {
	fmt.Fprintf(c, "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nX-Origin: raw\r\nContent-Length: %d\r\n\r\n%s", status, len(body), body)
}

// check reports what the origin must not have received: a request whose
// target is not in allowed (an entry ending in "*" is a prefix) or whose
// Host is not the origin's own, bytes it could not parse as requests, and
// bytes containing any of never.
func (o *smugOrigin) check(t *testing.T, allowed, never []string) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, rc := range o.conns {
		for _, r := range rc.requests {
			if r.host != o.addr {
				t.Errorf("origin connection %d received %s %q with Host %q, not %q", i, r.method, r.target, r.host, o.addr)
			}
			if r.target == "/robots.txt" || smugTargetAllowed(r.target, allowed) {
				continue
			}
			t.Errorf("origin connection %d received %s %q, which the proxy must not forward\nbytes received: %s", i, r.method, r.target, smugAbbrev(string(rc.raw)))
		}
		for _, u := range rc.unparsable {
			t.Errorf("origin connection %d received bytes it cannot parse as a request (%s)\nbytes received: %s", i, u, smugAbbrev(string(rc.raw)))
		}
		for _, n := range never {
			if strings.Contains(string(rc.raw), n) {
				t.Errorf("origin connection %d received %q\nbytes received: %s", i, n, smugAbbrev(string(rc.raw)))
			}
		}
	}
}

func smugTargetAllowed(target string, allowed []string) bool {
	for _, a := range allowed {
		if target == a || strings.HasSuffix(a, "*") && strings.HasPrefix(target, a[:len(a)-1]) {
			return true
		}
	}
	return false
}

// smugConnEnded reports whether err is a connection that ended (closed or
// reset by the peer), not a timeout or a parse error.
func smugConnEnded(err error) bool {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	case errors.As(err, &ne) && ne.Timeout():
		return false
	}
	return false
}

// smugOriginCert is a self-signed certificate for the raw origins on
// 127.0.0.1-3, which testConfig makes the proxy trust.
var smugOriginCert = sync.OnceValues(func() (tls.Certificate, *x509.Certificate) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "robotsgate raw test origin"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2), net.IPv4(127, 0, 0, 3)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, leaf
})

// smuggleMode is where a case's bytes are sent.
type smuggleMode int

const (
	smugOnProxyPort   smuggleMode = 1 << iota // absolute-form on the proxy port
	smugInTLSTunnel                           // origin-form in an intercepted TLS tunnel
	smugInPlainTunnel                         // origin-form in a CONNECT tunnel carrying plain HTTP
	smugTunnelModes   = smugInTLSTunnel | smugInPlainTunnel
	smugAllModes      = smugOnProxyPort | smugTunnelModes
)

var smuggleModes = []struct {
	mode smuggleMode
	name string
}{{smugOnProxyPort, "proxy-port"}, {smugInTLSTunnel, "tls-tunnel"}, {smugInPlainTunnel, "plain-tunnel"}}

// smuggleEnv is what a case's bytes are written for.
type smuggleEnv struct {
	t     string // the prefix of request-targets: "http://host:port" on the proxy port, "" in tunnels
	h     string // the origin's authority: its Host, the tunnel's authority
	other string // another origin's authority (127.0.0.2, same port)
	port2 string // the origin's address with another port
}

// x expands {T} (the request-target prefix), {H} (the origin), {O}
// (another origin) and {P} (the origin's host with another port).
func (e smuggleEnv) x(s string) string {
	return strings.NewReplacer("{T}", e.t, "{H}", e.h, "{O}", e.other, "{P}", e.port2).Replace(s)
}

// get is a plain GET of path.
func (e smuggleEnv) get(path string) string {
	return e.x("GET {T}" + path + " HTTP/1.1\r\nHost: {H}\r\n\r\n")
}

// post is a POST of path with the given field lines (each ending in CR LF)
// after Host, and body.
func (e smuggleEnv) post(path, fields, body string) string {
	return e.x("POST {T}"+path+" HTTP/1.1\r\nHost: {H}\r\n") + fields + "\r\n" + body
}

func smugChunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

// smuggleStep writes send, then reads one response per entry of want: the
// acceptable status codes separated by "|", "EOF" if the connection may
// end there (then the case reads nothing more).
type smuggleStep struct {
	send func(smuggleEnv) string
	want []string
}

type smugglingCase struct {
	name  string
	modes smuggleMode // 0: all
	steps []smuggleStep
	// closed: the proxy must close the connection after the last expected
	// response. Otherwise, unless that response said "Connection: close",
	// a GET of /sentinel must be answered next by the origin: every byte
	// sent before it was answered, none was taken for another request.
	closed bool
	// allowed: the request-targets the origin may receive (/robots.txt
	// and /sentinel always).
	allowed []string
	// never: byte strings the origin must not receive; nil means
	// "/private", an empty slice nothing.
	never []string
}

func smugSend(f func(smuggleEnv) string, want ...string) []smuggleStep {
	return []smuggleStep{{f, want}}
}

func smugFixed(s string) func(smuggleEnv) string { return func(e smuggleEnv) string { return e.x(s) } }

const smuggleDeadline = 5 * time.Second

func smugglingCases() []smugglingCase {
	privSmuggled := func(e smuggleEnv) string { return e.get("/private/smuggled") }
	var cases []smugglingCase
	add := func(c ...smugglingCase) { cases = append(cases, c...) }

	// CL+TE, both orders.
	add(smugglingCase{name: "CL+TE/CL first, CL points into a smuggled request", closed: true,
		steps: smugSend(func(e smuggleEnv) string {
			return e.post("/ok", "Content-Length: 8\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"+privSmuggled(e))
		}, "400")})
	add(smugglingCase{name: "CL+TE/TE first, the chunk holds a smuggled request", closed: true,
		steps: smugSend(func(e smuggleEnv) string {
			return e.post("/ok", "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n", smugChunk(privSmuggled(e))+"0\r\n\r\n")
		}, "400")})
	add(smugglingCase{name: "CL+TE/to a disallowed path", closed: true,
		steps: smugSend(func(e smuggleEnv) string {
			return e.post("/private/x", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n")
		}, "400")})
	add(smugglingCase{name: "CL+TE/after an allowed request in the same write", closed: true, allowed: []string{"/ok"},
		steps: smugSend(func(e smuggleEnv) string {
			return e.get("/ok") + e.post("/ok2", "Content-Length: 8\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"+privSmuggled(e))
		}, "200", "400")})

	// Transfer-Encoding spellings: with a Content-Length, ambiguous (400);
	// alone, a body net/http reads as chunked (the connection then ends)
	// or refuses (501).
	for _, te := range []struct{ name, fields, alone string }{
		{"xchunked", "Transfer-Encoding: xchunked\r\n", "501"},
		{"leading spaces in the value", "Transfer-Encoding:   chunked\r\n", "200"},
		{"chunked, identity", "Transfer-Encoding: chunked, identity\r\n", "501"},
		{"tab before the value", "Transfer-Encoding:\tchunked\r\n", "200"},
		{"upper case", "TRANSFER-ENCODING: CHUNKED\r\n", "200"},
		{"two fields", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "501"},
		{"identity then chunked", "Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n", "501"},
		{"empty value", "Transfer-Encoding: \r\n", "501"},
	} {
		add(smugglingCase{name: "TE " + te.name + "/with CL", closed: true,
			steps: smugSend(func(e smuggleEnv) string {
				return e.post("/ok", "Content-Length: 5\r\n"+te.fields, "0\r\n\r\n"+privSmuggled(e))
			}, "400")})
		add(smugglingCase{name: "TE " + te.name + "/alone, a smuggled request after the body", closed: true, allowed: []string{"/ok"},
			steps: smugSend(func(e smuggleEnv) string {
				return e.post("/ok", te.fields, "5\r\nhello\r\n0\r\n\r\n"+privSmuggled(e))
			}, te.alone)})
	}
	// HTTP/1.0 has no transfer codings (net/http reads no body): the
	// connection must end after the response (RFC 9112 §6.1), so that the
	// chunked body is never read as requests.
	add(smugglingCase{name: "TE in HTTP/1.0/chunked body holding a request", closed: true, allowed: []string{"/ok"},
		steps: smugSend(func(e smuggleEnv) string {
			return e.x("POST {T}/ok HTTP/1.0\r\nHost: {H}\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n") +
				smugChunk(privSmuggled(e)) + "0\r\n\r\n"
		}, "200|400")})
	add(smugglingCase{name: "TE in HTTP/1.0/the body is a bare request", closed: true, allowed: []string{"/ok"},
		never: []string{"/private", "/smuggled"},
		steps: smugSend(func(e smuggleEnv) string {
			return e.x("POST {T}/ok HTTP/1.0\r\nHost: {H}\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n") +
				e.get("/smuggled") + privSmuggled(e)
		}, "200|400")})
	add(smugglingCase{name: "TE in HTTP/1.0/with CL", closed: true,
		steps: smugSend(func(e smuggleEnv) string {
			return e.x("POST {T}/ok HTTP/1.0\r\nHost: {H}\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n") +
				"0\r\n\r\n" + privSmuggled(e)
		}, "400")})

	// Several Content-Length fields.
	add(smugglingCase{name: "duplicate CL/equal, then a disallowed request", allowed: []string{"/ok"},
		steps: smugSend(func(e smuggleEnv) string {
			return e.post("/ok", "Content-Length: 5\r\nContent-Length: 5\r\n", "hello") + e.get("/private/x")
		}, "200", "403")})
	add(smugglingCase{name: "duplicate CL/unequal, smaller first", closed: true,
		steps: smugSend(func(e smuggleEnv) string {
			s := privSmuggled(e)
			return e.post("/ok", fmt.Sprintf("Content-Length: 5\r\nContent-Length: %d\r\n", 5+len(s)), "hello"+s)
		}, "400")})
	add(smugglingCase{name: "duplicate CL/unequal, larger first", closed: true,
		steps: smugSend(func(e smuggleEnv) string {
			s := privSmuggled(e)
			return e.post("/ok", fmt.Sprintf("Content-Length: %d\r\nContent-Length: 5\r\n", 5+len(s)), "hello"+s)
		}, "400")})
	add(smugglingCase{name: "duplicate CL/one field, a list", closed: true,
		steps: smugSend(func(e smuggleEnv) string {
			return e.post("/ok", "Content-Length: 5, 5\r\n", "hello"+privSmuggled(e))
		}, "400")})

	// Invalid Content-Length values: 400, the body never read as requests.
	for _, cl := range []string{"+5", "5 5", "0x5", "-5", "5.0", "", "9223372036854775808", "99999999999999999999999999"} {
		add(smugglingCase{name: fmt.Sprintf("invalid CL/%q", cl), closed: true,
			steps: smugSend(func(e smuggleEnv) string {
				return e.post("/ok", "Content-Length: "+cl+"\r\n", "hello"+privSmuggled(e))
			}, "400")})
	}
	// The largest length net/http takes: the rest of the connection is the
	// body of an allowed request (forwarded as body: allowed), never
	// requests; and a refusal of a disallowed one ends the connection.
	add(smugglingCase{name: "CL 2^63-1/allowed, short body and a smuggled request", allowed: []string{"/ok"}, never: []string{},
		steps: smugSend(func(e smuggleEnv) string {
			return e.post("/ok", "Content-Length: 9223372036854775807\r\n", "abc"+privSmuggled(e)+e.get("/smuggled"))
		}, "200")})
	add(smugglingCase{name: "CL 2^63-1/disallowed, short body and a smuggled request", closed: true,
		never: []string{"/private", "/smuggled"},
		steps: smugSend(func(e smuggleEnv) string {
			return e.post("/private/x", "Content-Length: 9223372036854775807\r\n", "abc"+e.get("/smuggled"))
		}, "403")})

	// Bare LF line endings: read as net/http reads them.
	add(smugglingCase{name: "bare LF/pipelined allowed and disallowed", allowed: []string{"/ok"},
		steps: smugSend(smugFixed("GET {T}/ok HTTP/1.1\nHost: {H}\n\nGET {T}/private/x HTTP/1.1\nHost: {H}\n\n"), "200", "403")})
	add(smugglingCase{name: "bare LF/CL+TE", closed: true,
		steps: smugSend(func(e smuggleEnv) string {
			return e.x("POST {T}/ok HTTP/1.1\nHost: {H}\nContent-Length: 5\nTransfer-Encoding: chunked\n\n0\r\n\r\n") + privSmuggled(e)
		}, "400")})
	add(smugglingCase{name: "bare LF/mixed with CR LF, body then a disallowed request", allowed: []string{"/ok"},
		steps: smugSend(func(e smuggleEnv) string {
			return e.x("POST {T}/ok HTTP/1.1\r\nHost: {H}\nContent-Length: 5\r\n\nhello") + e.get("/private/x")
		}, "200", "403")})
	add(smugglingCase{name: "bare LF/CR LF CR LF ends no head early", closed: true,
		steps: smugSend(func(e smuggleEnv) string {
			return e.x("POST {T}/ok HTTP/1.1\nHost: {H}\n\rX: y\nContent-Length: 5\nTransfer-Encoding: chunked\n\n0\r\n\r\n") + privSmuggled(e)
		}, "400")})

	// obs-fold: net/http folds a line starting with a space or tab into
	// the field before it, where the guard would read two lines
	// (regression: "Content-Length:" then " 91" was a length of 0 to the
	// guard and of 91 to net/http, so a body was taken for the next head
	// and a CL+TE request passed). RFC 9112 §5.2 lets a server refuse
	// obs-fold with 400: every folded head is refused, none forwarded.
	folded := map[string]func(e smuggleEnv) string{
		"Transfer-Encoding folded into another field": func(e smuggleEnv) string {
			return e.x("POST {T}/ok HTTP/1.1\r\nHost: {H}\r\nX-Fold: a\r\n Transfer-Encoding: chunked\r\n\r\n") +
				"5\r\nhello\r\n0\r\n\r\n" + privSmuggled(e)
		},
		"Transfer-Encoding value on the next line, with CL": func(e smuggleEnv) string {
			return e.post("/ok", "Transfer-Encoding:\r\n chunked\r\nContent-Length: 5\r\n", "0\r\n\r\n"+privSmuggled(e))
		},
		"Content-Length folded into another field": func(e smuggleEnv) string {
			return e.x("POST {T}/ok HTTP/1.1\r\nHost: {H}\r\nX-Fold: a\r\n Content-Length: 5\r\n\r\n") + e.get("/private/x")
		},
		"Content-Length value on the next line, then a disallowed request": func(e smuggleEnv) string {
			return e.post("/ok", "Content-Length:\r\n 5\r\n", "hello") + e.get("/private/x")
		},
		"Content-Length value on the next line, the body holds a CL+TE head": func(e smuggleEnv) string {
			body := e.post("/in-body", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n")
			return e.post("/ok", fmt.Sprintf("Content-Length:\r\n %d\r\n", len(body)), body) + e.get("/private/x")
		},
		"Content-Length value on the next line hides two Host fields": func(e smuggleEnv) string {
			hidden := e.x("GET {T}/two-hosts HTTP/1.1\r\nHost: {H}\r\nHost: {O}\r\nConnection: close\r\n\r\n")
			inner := e.x(fmt.Sprintf("GET {T}/in-body HTTP/1.1\r\nHost: {H}\r\nContent-Length: %d\r\n\r\n", len(hidden)))
			return e.post("/ok", fmt.Sprintf("Content-Length:\r\n %d\r\n", len(inner)), inner) + hidden
		},
		"on the first field line": func(e smuggleEnv) string {
			return e.x("POST {T}/ok HTTP/1.1\r\n Transfer-Encoding: chunked\r\nHost: {H}\r\nContent-Length: 5\r\n\r\n0\r\n\r\n") + privSmuggled(e)
		},
	}
	for _, fold := range []string{" ", "\t"} {
		name := map[string]string{" ": "space", "\t": "tab"}[fold]
		folded["Content-Length value on the next line ("+name+") hides a CL+TE request"] = func(e smuggleEnv) string {
			hidden := e.post("/cl-te", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n")
			inner := e.x(fmt.Sprintf("GET {T}/in-body HTTP/1.1\r\nHost: {H}\r\nContent-Length: %d\r\n\r\n", len(hidden)))
			return e.post("/ok", fmt.Sprintf("Content-Length:\r\n%s%d\r\n", fold, len(inner)), inner) + hidden
		}
	}
	for name, raw := range folded {
		add(smugglingCase{name: "obs-fold/" + name, closed: true, steps: smugSend(raw, "400")})
	}

	// Control bytes in field names and values and in the request-target.
	for _, cb := range []struct{ name, raw string }{
		{"NUL in a field name", "POST {T}/ok HTTP/1.1\r\nHost: {H}\r\nContent\x00Length: 5\r\n\r\nhello"},
		{"NUL in a field value", "GET {T}/ok HTTP/1.1\r\nHost: {H}\r\nX-A: a\x00b\r\n\r\n"},
		{"NUL after the Content-Length value", "POST {T}/ok HTTP/1.1\r\nHost: {H}\r\nContent-Length: 5\x00\r\n\r\nhello"},
		{"NUL in the Host value", "GET {T}/ok HTTP/1.1\r\nHost: {H}\x00\r\n\r\n"},
		{"NUL in the request-target", "GET {T}/ok\x00/private HTTP/1.1\r\nHost: {H}\r\n\r\n"},
		{"DEL in the request-target", "GET {T}/ok\x7f HTTP/1.1\r\nHost: {H}\r\n\r\n"},
		{"tab in the request-target", "GET {T}/ok\t/private HTTP/1.1\r\nHost: {H}\r\n\r\n"},
		{"bare CR in the request line", "GET {T}/ok\rGET {T}/private/x HTTP/1.1\r\nHost: {H}\r\n\r\n"},
		{"bare CR in a value hides Content-Length", "POST {T}/ok HTTP/1.1\r\nHost: {H}\r\nX-A: a\rContent-Length: 5\r\n\r\nhello"},
		{"vertical tab before the colon", "POST {T}/ok HTTP/1.1\r\nHost: {H}\r\nContent-Length\x0b: 5\r\n\r\nhello"},
		{"space before the colon", "POST {T}/ok HTTP/1.1\r\nHost: {H}\r\nContent-Length : 5\r\n\r\nhello"},
		{"form feed in Transfer-Encoding", "POST {T}/ok HTTP/1.1\r\nHost: {H}\r\nTransfer-Encoding: \x0cchunked\r\n\r\n0\r\n\r\n"},
		{"0x01 in a field name", "GET {T}/ok HTTP/1.1\r\nHost: {H}\r\nX\x01A: b\r\n\r\n"},
		{"ESC in a field value", "GET {T}/ok HTTP/1.1\r\nHost: {H}\r\nX-A: \x1b[0m\r\n\r\n"},
	} {
		add(smugglingCase{name: "control bytes/" + cb.name, closed: true,
			steps: smugSend(func(e smuggleEnv) string { return e.x(cb.raw) + privSmuggled(e) }, "400")})
	}
	// A method with a NUL, a space before the request line: in a plain
	// tunnel the first bytes are no HTTP request line, so it is closed.
	add(smugglingCase{name: "control bytes/NUL in the method", closed: true,
		steps: smugSend(func(e smuggleEnv) string { return e.x("G\x00T {T}/ok HTTP/1.1\r\nHost: {H}\r\n\r\n") + privSmuggled(e) }, "400|EOF")})
	add(smugglingCase{name: "control bytes/space before the request line", closed: true,
		steps: smugSend(func(e smuggleEnv) string { return " " + e.get("/ok") + privSmuggled(e) }, "400|EOF")})

	// Pipelining: every request in one write is judged on its own.
	add(smugglingCase{name: "pipelining/allowed then disallowed", allowed: []string{"/ok"},
		steps: smugSend(func(e smuggleEnv) string { return e.get("/ok") + e.get("/private/x") }, "200", "403")})
	add(smugglingCase{name: "pipelining/disallowed then allowed", allowed: []string{"/ok"},
		steps: smugSend(func(e smuggleEnv) string { return e.get("/private/x") + e.get("/ok") }, "403", "200")})
	add(smugglingCase{name: "pipelining/four, alternating", allowed: []string{"/ok", "/ok2"},
		steps: smugSend(func(e smuggleEnv) string {
			return e.get("/ok") + e.get("/private/x") + e.get("/ok2") + e.get("/private/y")
		}, "200", "403", "200", "403")})
	add(smugglingCase{name: "pipelining/body that looks like a request, then disallowed", allowed: []string{"/ok"},
		steps: smugSend(func(e smuggleEnv) string {
			body := e.get("/in-body")
			return e.post("/ok", fmt.Sprintf("Content-Length: %d\r\n", len(body)), body) + e.get("/private/x")
		}, "200", "403")})
	add(smugglingCase{name: "pipelining/disallowed POST with a body, then disallowed", never: []string{"/private", "/smuggled"},
		steps: smugSend(func(e smuggleEnv) string {
			body := e.get("/smuggled")
			return e.post("/private/x", fmt.Sprintf("Content-Length: %d\r\n", len(body)), body) + e.get("/private/y")
		}, "403", "403")})

	// Expect: 100-continue to a disallowed path: the refusal comes without
	// a 100, and the body sent anyway is never read as a request.
	add(smugglingCase{name: "Expect 100-continue/disallowed, body sent anyway is a request", never: []string{"/private", "/smuggled"},
		steps: smugSend(func(e smuggleEnv) string {
			body := e.get("/smuggled")
			return e.post("/private/x", fmt.Sprintf("Expect: 100-continue\r\nContent-Length: %d\r\n", len(body)), body)
		}, "403")})
	add(smugglingCase{name: "Expect 100-continue/disallowed, body sent after the refusal", never: []string{"/private", "/smuggled"},
		steps: []smuggleStep{
			{func(e smuggleEnv) string {
				return e.post("/private/x", fmt.Sprintf("Expect: 100-continue\r\nContent-Length: %d\r\n", len(e.get("/smuggled"))), "")
			}, []string{"403"}},
			{func(e smuggleEnv) string { return e.get("/smuggled") }, nil},
		}})
	add(smugglingCase{name: "Expect 100-continue/disallowed, body is a disallowed request",
		steps: smugSend(func(e smuggleEnv) string {
			body := e.get("/private/y")
			return e.post("/private/x", fmt.Sprintf("Expect: 100-continue\r\nContent-Length: %d\r\n", len(body)), body)
		}, "403")})
	add(smugglingCase{name: "Expect 100-continue/allowed", allowed: []string{"/ok"},
		steps: smugSend(func(e smuggleEnv) string {
			return e.post("/ok", "Expect: 100-continue\r\nContent-Length: 5\r\n", "hello") + e.get("/private/x")
		}, "200", "403")})

	// Heads over 1 MiB: 431, and nothing of them forwarded.
	add(smugglingCase{name: "oversized head/one field over 1 MiB", closed: true,
		steps: smugSend(func(e smuggleEnv) string {
			return e.x("GET {T}/ok HTTP/1.1\r\nHost: {H}\r\nX-Big: ") + strings.Repeat("a", maxHeaderBytes+8192) + "\r\n\r\n" + privSmuggled(e)
		}, "431")})
	add(smugglingCase{name: "oversized head/many fields over 1 MiB hiding CL+TE", closed: true,
		steps: smugSend(func(e smuggleEnv) string {
			var b strings.Builder
			b.WriteString(e.x("POST {T}/ok HTTP/1.1\r\nHost: {H}\r\n"))
			for i := 0; b.Len() < maxHeaderBytes+8192; i++ {
				fmt.Fprintf(&b, "X-F%d: %s\r\n", i, strings.Repeat("b", 1000))
			}
			b.WriteString("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
			return b.String() + privSmuggled(e)
		}, "431|400")})
	add(smugglingCase{name: "oversized head/a 32 KiB request-target is not one", allowed: []string{"/ok?q=*"},
		steps: smugSend(func(e smuggleEnv) string { return e.get("/ok?q="+strings.Repeat("c", 32<<10)) + e.get("/private/x") }, "200", "403")})

	// Upgrades: the connection is handed over only after a relayed 101.
	upgrade := func(e smuggleEnv, path string) string { return upgradeRequest(e.t+path, e.h) }
	clte := func(e smuggleEnv) string {
		return e.post("/cl-te", "Content-Length: 8\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"+privSmuggled(e))
	}
	add(smugglingCase{name: "upgrade refused by the origin/then CL+TE, two writes", closed: true, allowed: []string{"/ok"},
		steps: []smuggleStep{
			{func(e smuggleEnv) string { return upgrade(e, "/ok") }, []string{"426"}},
			{clte, []string{"400"}},
		}})
	add(smugglingCase{name: "upgrade refused by the origin/then CL+TE, one write", closed: true, allowed: []string{"/ok"},
		steps: smugSend(func(e smuggleEnv) string { return upgrade(e, "/ok") + clte(e) }, "426", "400")})
	add(smugglingCase{name: "upgrade refused by the origin/then a disallowed request", allowed: []string{"/ok"},
		steps: smugSend(func(e smuggleEnv) string { return upgrade(e, "/ok") + e.get("/private/x") }, "426", "403")})
	add(smugglingCase{name: "upgrade to a disallowed path/then CL+TE", closed: true,
		steps: smugSend(func(e smuggleEnv) string { return upgrade(e, "/private/ws") + clte(e) }, "403", "400")})
	h2c := func(e smuggleEnv, path string) string {
		return e.x("GET {T}" + path + " HTTP/1.1\r\nHost: {H}\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
	}
	add(smugglingCase{name: "upgrade to h2c (stripped)/then CL+TE", closed: true, allowed: []string{"/ok"},
		steps: smugSend(func(e smuggleEnv) string { return h2c(e, "/ok") + clte(e) }, "200", "400")})

	// An origin's 101 to a request that did not ask for it: 502, and the
	// connection is not handed over to the origin.
	add(smugglingCase{name: "unrequested 101/GET /private in the same write", allowed: []string{"/switch", "/ok"},
		steps: smugSend(func(e smuggleEnv) string { return e.get("/switch") + e.get("/private/x") + e.get("/ok") }, "502", "403|EOF", "200|EOF")})
	add(smugglingCase{name: "unrequested 101/GET /private after the 502", allowed: []string{"/switch", "/ok"},
		steps: []smuggleStep{
			{func(e smuggleEnv) string { return e.get("/switch") }, []string{"502"}},
			{func(e smuggleEnv) string { return e.get("/private/x") + e.get("/ok") }, []string{"403|EOF", "200|EOF"}},
		}})
	add(smugglingCase{name: "unrequested 101/without Upgrade fields", allowed: []string{"/switch-bare", "/ok"},
		steps: smugSend(func(e smuggleEnv) string { return e.get("/switch-bare") + e.get("/private/x") + e.get("/ok") }, "502", "403|EOF", "200|EOF")})
	add(smugglingCase{name: "unrequested 101/WebSocket asked, h2c given", allowed: []string{"/switch", "/ok"},
		steps: smugSend(func(e smuggleEnv) string { return upgrade(e, "/switch") + e.get("/private/x") + e.get("/ok") }, "502", "403|EOF", "200|EOF")})
	add(smugglingCase{name: "unrequested 101/h2c asked (stripped), h2c given", allowed: []string{"/switch", "/ok"},
		steps: smugSend(func(e smuggleEnv) string { return h2c(e, "/switch") + e.get("/private/x") + e.get("/ok") }, "502", "403|EOF", "200|EOF")})

	// Host.
	add(smugglingCase{name: "Host/missing on HTTP/1.1", closed: true,
		steps: smugSend(func(e smuggleEnv) string { return e.x("GET {T}/ok HTTP/1.1\r\n\r\n") + privSmuggled(e) }, "400")})
	add(smugglingCase{name: "Host/missing on HTTP/1.0", allowed: []string{"/ok"},
		steps: smugSend(smugFixed("GET {T}/ok HTTP/1.0\r\n\r\n"), "200")})
	for _, h := range []string{"a b", "{H}/private", "{H}@{O}", "{H}\\", "{H}?x"} {
		add(smugglingCase{name: fmt.Sprintf("Host/invalid %q", h), closed: true,
			steps: smugSend(func(e smuggleEnv) string {
				return e.x("GET {T}/ok HTTP/1.1\r\nHost: "+h+"\r\n\r\n") + privSmuggled(e)
			}, "400")})
	}
	// Values net/http lets through (its check is byte by byte): in
	// absolute-form the Host field is ignored for the target's authority
	// (RFC 9112 §3.2.2); in a tunnel they name no origin of the tunnel.
	for _, h := range []string{"[::1", "{H},{O}", "{H}:80"} {
		add(smugglingCase{name: fmt.Sprintf("Host/malformed %q/absolute-form", h), modes: smugOnProxyPort, allowed: []string{"/ok"},
			steps: smugSend(func(e smuggleEnv) string {
				return e.x("GET {T}/ok HTTP/1.1\r\nHost: "+h+"\r\n\r\n") + e.get("/private/x")
			}, "400|200", "403|EOF")})
		add(smugglingCase{name: fmt.Sprintf("Host/malformed %q/in a tunnel", h), modes: smugTunnelModes,
			steps: smugSend(func(e smuggleEnv) string {
				return e.x("GET {T}/ok HTTP/1.1\r\nHost: "+h+"\r\n\r\n") + e.get("/private/x")
			}, "400|421", "403|EOF")})
	}
	// An empty Host is valid (RFC 9112 §3.2); in a tunnel it means the
	// tunnel's authority.
	add(smugglingCase{name: "Host/empty", allowed: []string{"/ok"},
		steps: smugSend(func(e smuggleEnv) string {
			return e.x("GET {T}/ok HTTP/1.1\r\nHost: \r\n\r\n") + e.get("/private/x")
		}, "400|200", "403|EOF")})
	add(smugglingCase{name: "Host/two fields", closed: true,
		steps: smugSend(func(e smuggleEnv) string {
			return e.x("GET {T}/ok HTTP/1.1\r\nHost: {H}\r\nHost: {O}\r\n\r\n") + privSmuggled(e)
		}, "400")})
	add(smugglingCase{name: "Host/two equal fields, different case", closed: true,
		steps: smugSend(func(e smuggleEnv) string {
			return e.x("GET {T}/ok HTTP/1.1\r\nHost: {H}\r\nhost: {H}\r\n\r\n") + privSmuggled(e)
		}, "400")})
	add(smugglingCase{name: "Host/absolute-form, Host names another origin", modes: smugOnProxyPort, allowed: []string{"/ok"},
		steps: smugSend(smugFixed("GET {T}/ok HTTP/1.1\r\nHost: {O}\r\n\r\n"), "200")})
	add(smugglingCase{name: "Host/another origin inside the tunnel", modes: smugTunnelModes,
		steps: smugSend(smugFixed("GET /ok HTTP/1.1\r\nHost: {O}\r\n\r\n"), "421")})
	add(smugglingCase{name: "Host/another port inside the tunnel", modes: smugTunnelModes,
		steps: smugSend(smugFixed("GET /ok HTTP/1.1\r\nHost: {P}\r\n\r\n"), "421")})
	add(smugglingCase{name: "Host/absolute-form for another origin inside the tunnel", modes: smugTunnelModes,
		steps: smugSend(smugFixed("GET http://{O}/ok HTTP/1.1\r\nHost: {H}\r\n\r\n"), "421")})
	add(smugglingCase{name: "Host/another origin inside the tunnel, then a disallowed request", modes: smugTunnelModes,
		steps: smugSend(func(e smuggleEnv) string { return e.x("GET /ok HTTP/1.1\r\nHost: {O}\r\n\r\n") + e.get("/private/x") }, "421", "403")})

	// CONNECT inside a tunnel: refused, and what follows is never read as
	// requests.
	add(smugglingCase{name: "CONNECT inside a tunnel/to the same origin", modes: smugTunnelModes, closed: true,
		steps: smugSend(func(e smuggleEnv) string {
			return e.x("CONNECT {H} HTTP/1.1\r\nHost: {H}\r\n\r\n") + e.get("/private/x") + e.get("/smuggled")
		}, "405")})
	add(smugglingCase{name: "CONNECT inside a tunnel/to another origin", modes: smugTunnelModes, closed: true,
		steps: smugSend(func(e smuggleEnv) string {
			return e.x("CONNECT {O} HTTP/1.1\r\nHost: {O}\r\n\r\n") + e.get("/private/x")
		}, "405")})

	// A refused request whose announced body never comes: an answer, or
	// the connection ends by timeouts.client_body (2 s here), not a hang.
	add(smugglingCase{name: "stalled body/disallowed request, body never comes", closed: true,
		steps: smugSend(func(e smuggleEnv) string {
			return e.post("/private/x", "Content-Length: 1000\r\n", "short")
		}, "403|408|EOF")})
	return cases
}

// TestRequestSmuggling runs every case in every mode it applies to, each
// on its own raw origin and client connection.
func TestRequestSmuggling(t *testing.T) {
	cert, leaf := smugOriginCert()
	cfg := testConfig(t, leaf)
	cfg.Timeouts.ClientBody = config.Duration(2 * time.Second)
	p := startProxy(t, cfg)
	for _, tc := range smugglingCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, m := range smuggleModes {
				if tc.modes != 0 && tc.modes&m.mode == 0 {
					continue
				}
				t.Run(m.name, func(t *testing.T) {
					t.Parallel()
					runSmugglingCase(t, p, &cert, tc, m.mode)
				})
			}
		})
	}
}

func runSmugglingCase(t *testing.T, p *testProxy, cert *tls.Certificate, tc smugglingCase, mode smuggleMode) {
	var o *smugOrigin
	if mode == smugInTLSTunnel {
		o = startSmugOrigin(t, "127.0.0.3", cert)
	} else {
		o = startSmugOrigin(t, "127.0.0.3", nil)
	}
	_, port, _ := net.SplitHostPort(o.addr)
	n, _ := strconv.Atoi(port)
	e := smuggleEnv{h: o.addr, other: "127.0.0.2:" + port, port2: net.JoinHostPort("127.0.0.3", strconv.Itoa(n+1))}

	c := dialProxy(t, p)
	c.SetDeadline(time.Now().Add(smuggleDeadline))
	switch mode {
	case smugOnProxyPort:
		e.t = "http://" + o.addr
	case smugInTLSTunnel:
		c = c.connect(t, p, o.addr, "127.0.0.3")
	case smugInPlainTunnel:
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", o.addr, o.addr)
		resp, err := http.ReadResponse(c.r, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
	}
	c.SetDeadline(time.Now().Add(smuggleDeadline))

	allowed := append([]string{"/sentinel"}, tc.allowed...)
	never := tc.never
	if never == nil {
		never = []string{"/private"}
	}
	// The framing guard's stand-in for a refused request is the server's
	// own: never anything an origin sees.
	never = append(never, wire.RefuseHeader, "robotsgate.invalid")
	defer func() {
		if t.Failed() {
			t.Logf("sent (%s): %s", e.h, smugAbbrev(smugSentAll(tc, e)))
		}
	}()
	ended, lastClose := false, false
	for i, st := range tc.steps {
		if ended {
			t.Errorf("step %d: the connection ended before it", i+1)
			break
		}
		raw := st.send(e)
		written := make(chan struct{})
		go func() {
			defer close(written)
			io.WriteString(c, raw) // errors show in the reads
		}()
		for j, want := range st.want {
			resp, body, err := smugReadResponse(c)
			if err != nil {
				switch {
				case smugConnEnded(err) && strings.Contains(want, "EOF"):
					t.Logf("step %d, response %d: the connection ended", i+1, j+1)
					ended = true
				case smugConnEnded(err) && lastClose:
					// The previous response said "Connection: close": the
					// proxy need not read what follows it.
					t.Logf("step %d, response %d (want %s): none, the connection ended after a response with Connection: close", i+1, j+1, want)
					ended = true
				}
				if ended {
					break
				}
				if resp != nil {
					err = fmt.Errorf("%d %v with a body cut short after %s: %w", resp.StatusCode, resp.Header, smugAbbrev(body), err)
				}
				t.Errorf("step %d, response %d: want %s, got %v", i+1, j+1, want, err)
				ended = true
				break
			}
			lastClose = resp.Close
			t.Logf("step %d, response %d: %d (Connection: close %v) %s", i+1, j+1, resp.StatusCode, resp.Close, smugAbbrev(firstLine(body)))
			smugCheckAnswer(t, fmt.Sprintf("step %d, response %d", i+1, j+1), want, resp, body)
		}
		<-written
	}
	switch {
	case ended:
	case tc.closed || lastClose:
		// The connection must end (as the last response announced, if it
		// did), with nothing more: no answer to bytes sent after it.
		rest, err := io.ReadAll(c.r)
		if len(rest) > 0 {
			t.Errorf("after the last response the proxy sent %s", smugAbbrev(string(rest)))
		}
		if err != nil && !smugConnEnded(err) {
			t.Errorf("the proxy did not close the connection (last response with Connection: close: %v): %v", lastClose, err)
		}
	default:
		// Everything sent so far has been answered, and nothing of it is
		// left to be read as a request: the next answer is the sentinel's.
		io.WriteString(c, e.get("/sentinel"))
		resp, body, err := smugReadResponse(c)
		switch {
		case err != nil && smugConnEnded(err):
		case err != nil:
			t.Errorf("sentinel request: %v", err)
		case resp.StatusCode != 200 || body != "target=/sentinel":
			t.Errorf("sentinel request answered %d %s: another request was read from the bytes sent before it", resp.StatusCode, smugAbbrev(body))
		}
	}
	o.check(t, allowed, never)
}

// smugReadResponse reads the next response that is not an interim 1xx
// (a 101 is final), with its body.
func smugReadResponse(c *rawConn) (*http.Response, string, error) {
	for {
		resp, err := http.ReadResponse(c.r, nil)
		if err != nil {
			return nil, "", err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		return resp, string(b), err
	}
}

func smugCheckAnswer(t *testing.T, what, want string, resp *http.Response, body string) {
	t.Helper()
	code := strconv.Itoa(resp.StatusCode)
	if !strings.Contains("|"+want+"|", "|"+code+"|") {
		t.Errorf("%s: status %d (%s), want %s", what, resp.StatusCode, smugAbbrev(body), want)
		return
	}
	switch resp.StatusCode {
	case http.StatusOK:
		if resp.Header.Get("X-Origin") != "raw" || !strings.HasPrefix(body, "target=/") {
			t.Errorf("%s: a 200 that is not the origin's: %v %s", what, resp.Header, smugAbbrev(body))
		}
	case http.StatusForbidden:
		if d := resp.Header.Get("X-Robotsgate-Decision"); d != "disallow" {
			t.Errorf("%s: 403 with decision %q, want disallow", what, d)
		}
	case http.StatusBadRequest, 405, 421, 431, 501, http.StatusBadGateway:
		if resp.Header.Get("X-Origin") != "" {
			t.Errorf("%s: the origin answered the %d", what, resp.StatusCode)
		}
	}
}

func smugSentAll(tc smugglingCase, e smuggleEnv) string {
	var b strings.Builder
	for _, st := range tc.steps {
		b.WriteString(st.send(e))
	}
	return b.String()
}

// smugAbbrev quotes s, cutting out the middle of long ones (1 MiB heads).
func smugAbbrev(s string) string {
	if len(s) > 600 {
		return fmt.Sprintf("%q … (%d bytes) … %q", s[:300], len(s)-500, s[len(s)-200:])
	}
	return fmt.Sprintf("%q", s)
}
