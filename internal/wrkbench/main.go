// Command wrkbench starts what an external load generator (wrk, or
// internal/peerbench's Go client) needs to compare robotsgate with goproxy
// outside the Go benchmark: a loopback origin, a tuned goproxy v1.9.2
// and the net/http floor, with none of robotsgate's logic. robotsgate itself runs as its real
// binary. docs/benchmarks.md gives the commands. It is a benchmark tool,
// never part of robotsgate.
//
// The origin serves robots.txt (allowing /public), a 1 KiB body at
// /public/bench and, at /stats, how many times it served that body and how
// many of those requests carried a Web Bot Auth signature (so a benchmark
// can tell that a proxy forwarded every request rather than answering from
// a cache, and signed them when it should). With -origin-tls it serves the same over HTTPS,
// with a certificate from the CA of -origin-ca-cert and -origin-ca-key.
// goproxy gets the upstream settings docs/benchmarks.md describes (no
// HTTP(S)_PROXY, 256 idle connections per host, no compression, the
// client's Connection: close not copied upstream); with -mitm-ca-cert and
// -mitm-ca-key it intercepts every CONNECT with an ECDSA P-256 leaf per
// host minted once from that CA and its tls.Config cached (as a careful
// goproxy user would: an RSA leaf per connection is goproxy's default and
// is 100 times slower), trusting -upstream-ca for the origin. Each listens
// until interrupted or terminated.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/robotsgate/robotsgate/certs"
	"github.com/robotsgate/robotsgate/internal/floorproxy"
)

// bodySize is the size of the benchmark body, which clients check.
const bodySize = 1024

type options struct {
	originAddr, originTLSAddr         string
	originCACert, originCAKey         string
	goproxyAddr                       string
	floorAddr                         string
	mitmCACert, mitmCAKey, upstreamCA string // goproxy's and the floor's
}

// server is one listener of this process.
type server struct {
	addr string
	h    http.Handler
	tls  *tls.Config // nil: plain HTTP
}

func main() {
	var o options
	flag.StringVar(&o.originAddr, "origin", "127.0.0.2:18081", "origin listen address, plain HTTP (\"\": none)")
	flag.StringVar(&o.originTLSAddr, "origin-tls", "", "origin listen address, HTTPS (\"\": none; needs -origin-ca-cert and -origin-ca-key)")
	flag.StringVar(&o.originCACert, "origin-ca-cert", "", "CA certificate (PEM) that signs the HTTPS origin's certificate")
	flag.StringVar(&o.originCAKey, "origin-ca-key", "", "that CA's private key (PEM)")
	flag.StringVar(&o.goproxyAddr, "goproxy", "127.0.0.1:18082", "tuned goproxy listen address (\"\": none)")
	flag.StringVar(&o.floorAddr, "floor", "", "listen address of the net/http floor: net/http's server and httputil.ReverseProxy, transported as goproxy is, no logic (\"\": none); intercepts CONNECT with -mitm-ca-cert")
	flag.StringVar(&o.mitmCACert, "mitm-ca-cert", "", "goproxy intercepts CONNECT with leaves from this CA (PEM; \"\": tunnels are blind)")
	flag.StringVar(&o.mitmCAKey, "mitm-ca-key", "", "the interception CA's private key (PEM)")
	flag.StringVar(&o.upstreamCA, "upstream-ca", "", "extra PEM roots goproxy trusts for the origin's TLS")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "wrkbench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	var served, signed atomic.Int64
	var servers []server
	add := func(addr string, h http.Handler, tlsCfg *tls.Config) {
		if addr != "" { // "": not wanted in this process (each is pinned to its own CPU)
			servers = append(servers, server{addr, h, tlsCfg})
		}
	}
	origin := originHandler(&served, &signed)
	add(o.originAddr, origin, nil)
	if o.originTLSAddr != "" {
		ca, err := certs.LoadCA(o.originCACert, o.originCAKey)
		if err != nil {
			return fmt.Errorf("-origin-ca-cert/-origin-ca-key: %w", err)
		}
		m, err := certs.NewMinter(ca, certs.MinterOptions{})
		if err != nil {
			return err
		}
		host, _, err := net.SplitHostPort(o.originTLSAddr)
		if err != nil {
			return fmt.Errorf("-origin-tls: %w", err)
		}
		add(o.originTLSAddr, origin, m.TLSConfigFor(host))
	}
	if o.goproxyAddr != "" {
		gp, err := newGoproxy(o)
		if err != nil {
			return err
		}
		add(o.goproxyAddr, gp, nil)
	}
	if o.floorAddr != "" {
		tr, err := newTransport(o)
		if err != nil {
			return err
		}
		m, err := mitmMinter(o)
		if err != nil {
			return err
		}
		add(o.floorAddr, floorproxy.New(tr, m), nil)
	}
	for _, s := range servers {
		ln, err := net.Listen("tcp", s.addr)
		if err != nil {
			return err
		}
		if s.tls != nil {
			ln = tls.NewListener(ln, s.tls)
		}
		srv := &http.Server{Handler: s.h, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 90 * time.Second}
		go srv.Serve(ln)
	}
	fmt.Printf("origin %q, origin-tls %q, goproxy %q (mitm %v), floor %q; interrupt to stop\n",
		o.originAddr, o.originTLSAddr, o.goproxyAddr, o.mitmCACert != "", o.floorAddr)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	return nil
}

func originHandler(served, signed *atomic.Int64) http.Handler {
	body := make([]byte, bodySize)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			io.WriteString(w, "User-agent: *\nDisallow: /private\n")
		case "/public/bench":
			w.Header().Set("Content-Type", "text/plain")
			served.Add(1) // before the body, so a client never sees it uncounted
			if r.Header.Get("Signature-Input") != "" {
				signed.Add(1)
			}
			w.Write(body)
		case "/stats":
			fmt.Fprintf(w, "served=%d signed=%d\n", served.Load(), signed.Load())
		default:
			http.NotFound(w, r)
		}
	})
}

// newTransport is the upstream transport of goproxy and the floor: no
// HTTP(S)_PROXY, 256 idle connections per host, no compression, trusting
// -upstream-ca for the origin's TLS.
func newTransport(o options) (*http.Transport, error) {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		ResponseHeaderTimeout: 60 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   256,
		DisableCompression:    true,
	}
	if o.upstreamCA == "" {
		return tr, nil
	}
	pem, err := os.ReadFile(o.upstreamCA)
	if err != nil {
		return nil, fmt.Errorf("-upstream-ca: %w", err)
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("-upstream-ca %s: no PEM certificate", o.upstreamCA)
	}
	tr.TLSClientConfig = &tls.Config{RootCAs: roots}
	return tr, nil
}

// mitmMinter is the interception CA's minter; nil when -mitm-ca-cert and
// -mitm-ca-key are not given (CONNECT tunnels are blind).
func mitmMinter(o options) (*certs.Minter, error) {
	if o.mitmCACert == "" && o.mitmCAKey == "" {
		return nil, nil
	}
	if o.mitmCACert == "" || o.mitmCAKey == "" {
		return nil, errors.New("-mitm-ca-cert and -mitm-ca-key go together")
	}
	ca, err := certs.LoadCA(o.mitmCACert, o.mitmCAKey)
	if err != nil {
		return nil, fmt.Errorf("-mitm-ca-cert/-mitm-ca-key: %w", err)
	}
	return certs.NewMinter(ca, certs.MinterOptions{})
}

// newGoproxy is goproxy tuned as docs/benchmarks.md says, with none of
// robotsgate's logic.
func newGoproxy(o options) (*goproxy.ProxyHttpServer, error) {
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = log.New(io.Discard, "", 0)
	gp.KeepAcceptEncoding = true
	tr, err := newTransport(o)
	if err != nil {
		return nil, err
	}
	gp.Tr = tr
	gp.ConnectDial = nil
	m, err := mitmMinter(o)
	if err != nil {
		return nil, err
	}
	if m != nil {
		var configs sync.Map // host -> *tls.Config, made once per host
		tlsConfig := func(host string, _ *goproxy.ProxyCtx) (*tls.Config, error) {
			if c, ok := configs.Load(host); ok {
				return c.(*tls.Config), nil
			}
			c, _ := configs.LoadOrStore(host, m.TLSConfigFor(host))
			return c.(*tls.Config), nil
		}
		gp.OnRequest().HandleConnectFunc(func(host string, _ *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
			return &goproxy.ConnectAction{Action: goproxy.ConnectMitm, TLSConfig: tlsConfig}, host
		})
	}
	gp.OnRequest().DoFunc(func(req *http.Request, _ *goproxy.ProxyCtx) (*http.Request, *http.Response) {
		req.Close = false
		return req, nil
	})
	return gp, nil
}
