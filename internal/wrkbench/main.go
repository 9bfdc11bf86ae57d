// Command wrkbench starts what an external load generator (wrk) needs to
// compare robotsgate with goproxy outside the Go benchmark: a loopback
// origin and a tuned goproxy v1.9.2 with none of robotsgate's logic.
// robotsgate itself runs as its real binary. docs/benchmarks.md gives the
// commands. It is a benchmark tool, never part of robotsgate.
//
// The origin serves robots.txt (allowing /public) and a 1 KiB body at
// /public/bench; goproxy gets the upstream settings docs/benchmarks.md describes (no
// HTTP(S)_PROXY, 256 idle connections per host, no compression, the client's
// Connection: close not copied upstream). Both listen until interrupted.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/elazarl/goproxy"
)

func main() {
	originAddr := flag.String("origin", "127.0.0.2:18081", "origin listen address (\"\": none)")
	goproxyAddr := flag.String("goproxy", "127.0.0.1:18082", "tuned goproxy listen address (\"\": none)")
	flag.Parse()

	body := make([]byte, 1024)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			io.WriteString(w, "User-agent: *\nDisallow: /private\n")
		case "/public/bench":
			w.Header().Set("Content-Type", "text/plain")
			w.Write(body)
		default:
			http.NotFound(w, r)
		}
	})

	gp := goproxy.NewProxyHttpServer()
	gp.Logger = log.New(io.Discard, "", 0)
	gp.KeepAcceptEncoding = true
	gp.Tr = &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		ResponseHeaderTimeout: 60 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   256,
		DisableCompression:    true,
	}
	gp.ConnectDial = nil
	gp.OnRequest().DoFunc(func(req *http.Request, _ *goproxy.ProxyCtx) (*http.Request, *http.Response) {
		req.Close = false
		return req, nil
	})

	for _, s := range []struct {
		addr string
		h    http.Handler
	}{{*originAddr, origin}, {*goproxyAddr, gp}} {
		if s.addr == "" {
			continue // not wanted in this process (each is pinned to its own CPU)
		}
		ln, err := net.Listen("tcp", s.addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "wrkbench:", err)
			os.Exit(1)
		}
		srv := &http.Server{Handler: s.h, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 90 * time.Second}
		go srv.Serve(ln)
	}
	fmt.Printf("origin %q, goproxy %q; interrupt to stop\n", *originAddr, *goproxyAddr)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	<-stop
}
