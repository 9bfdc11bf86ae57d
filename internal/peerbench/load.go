package main

import (
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// bodyBytes is the size of the origin's benchmark body (internal/wrkbench).
const bodyBytes = 1024

// benchPath is the origin's benchmark resource, allowed by its robots.txt.
const benchPath = "/public/bench"

//go:embed check.lua
var checkLua string

// mode is one row of the table: how the load is generated.
type mode struct {
	name      string // as -modes names it
	label     string // the row's heading
	tls       bool   // CONNECT + TLS through the proxy's interception (Go client); else wrk
	keepAlive bool
	oneConn   bool // one connection instead of -conns
}

var modes = []mode{
	{name: "http-keepalive", label: "plain HTTP keep-alive", keepAlive: true},
	{name: "http-1conn", label: "plain HTTP, 1 connection (hop latency)", keepAlive: true, oneConn: true},
	{name: "https-keepalive", label: "intercepted HTTPS keep-alive", tls: true, keepAlive: true},
	{name: "https-newconn", label: "intercepted HTTPS, new connection per request", tls: true},
}

// loadResult is what one load run measured, the client's view.
type loadResult struct {
	ok, bad  int64 // responses 200 with the exact body; all others and errors
	seconds  float64
	p50, p99 time.Duration
	errs     string // what the bad ones were
}

func (r loadResult) rate() float64 {
	if r.seconds <= 0 {
		return 0
	}
	return float64(r.ok) / r.seconds
}

// runWrk runs wrk through s's plain HTTP port (absolute-form requests, as
// to a proxy), one thread, conns connections, for d, checking every
// response (check.lua).
func (e *env) runWrk(ctx context.Context, s *setup, conns int, d time.Duration, tag string) (loadResult, error) {
	script := filepath.Join(e.dir, "check.lua")
	if _, err := os.Stat(script); err != nil {
		if err := os.WriteFile(script, []byte(checkLua), 0o644); err != nil {
			return loadResult{}, err
		}
	}
	p, err := e.ps.start("wrk "+tag, e.loadCPU, filepath.Join(e.dir, "wrk-"+tag+".out"), nil,
		"env", "ORIGIN="+e.origin, "BODY_BYTES="+strconv.Itoa(bodyBytes),
		"wrk", "-t1", "-c"+strconv.Itoa(conns), "-d"+strconv.Itoa(int(d/time.Second))+"s",
		"--timeout", "10s", "-s", script, s.plain.String())
	if err != nil {
		return loadResult{}, err
	}
	select {
	case <-p.exited:
	case <-ctx.Done():
		e.ps.stopAll(5 * time.Second) // the run is ending: everything goes
		return loadResult{}, ctx.Err()
	}
	out, err := os.ReadFile(p.log)
	if err != nil {
		return loadResult{}, err
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		return loadResult{}, fmt.Errorf("wrk exited with %d\n%s", code, out)
	}
	return parseWrk(string(out))
}

// parseWrk reads check.lua's summary line from wrk's output.
func parseWrk(out string) (loadResult, error) {
	var line string
	for l := range strings.Lines(out) {
		if rest, ok := strings.CutPrefix(l, "peerbench-wrk "); ok {
			line = rest
		}
	}
	if line == "" {
		return loadResult{}, fmt.Errorf("no peerbench-wrk line in wrk's output:\n%s", out)
	}
	v := map[string]int64{}
	for _, f := range strings.Fields(line) {
		k, val, ok := strings.Cut(f, "=")
		n, err := strconv.ParseInt(val, 10, 64)
		if !ok || err != nil {
			return loadResult{}, fmt.Errorf("bad field %q in %q", f, line)
		}
		v[k] = n
	}
	for _, k := range []string{"requests", "ok", "bad", "duration_us", "p50_us", "p99_us", "connect", "read", "write", "timeout"} {
		if _, ok := v[k]; !ok {
			return loadResult{}, fmt.Errorf("no %s in %q", k, line)
		}
	}
	r := loadResult{
		ok: v["ok"], bad: v["bad"],
		seconds: float64(v["duration_us"]) / 1e6,
		p50:     time.Duration(v["p50_us"]) * time.Microsecond,
		p99:     time.Duration(v["p99_us"]) * time.Microsecond,
	}
	// Requests wrk counted that the check did not see, and socket errors,
	// are failures too.
	if missing := v["requests"] - v["ok"] - v["bad"]; missing > 0 {
		r.bad += missing
	}
	sockErrs := v["connect"] + v["read"] + v["write"] + v["timeout"]
	r.bad += sockErrs
	if r.bad > 0 {
		r.errs = fmt.Sprintf("%d bad responses, socket errors connect %d read %d write %d timeout %d",
			v["bad"], v["connect"], v["read"], v["write"], v["timeout"])
	}
	return r, nil
}

// runGo loads s's interception with conns clients for d: each client a
// transport of its own through the proxy (CONNECT, then TLS trusting the
// proxy's CA, verifying the origin's address), closed loop. With
// keepAlive each keeps its one tunnel for the whole run; without, every
// request is a new TCP connection, CONNECT and full TLS handshake (no
// session cache: nothing resumed). Each client makes one request before
// the clock starts (connection set-up, the proxy's leaf certificate).
func (e *env) runGo(ctx context.Context, s *setup, keepAlive bool, conns int, d time.Duration) (loadResult, error) {
	target := "https://" + e.originTLS + benchPath
	type worker struct {
		ok, bad int64
		lat     []time.Duration
		err     error
	}
	ws := make([]worker, conns)
	clients := make([]*http.Client, conns)
	for i := range clients {
		clients[i] = &http.Client{
			Timeout: 10 * time.Second,
			Transport: &http.Transport{
				Proxy:               http.ProxyURL(s.tls),
				TLSClientConfig:     &tls.Config{RootCAs: s.roots},
				DisableKeepAlives:   !keepAlive,
				MaxIdleConnsPerHost: 1,
				DisableCompression:  true,
			},
		}
	}
	defer func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}()
	var warm sync.WaitGroup
	for i := range ws {
		warm.Go(func() { ws[i].err = fetch(ctx, clients[i], target) })
	}
	warm.Wait()
	for i := range ws {
		if ws[i].err != nil {
			return loadResult{}, fmt.Errorf("first request: %w", ws[i].err)
		}
	}
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i := range ws {
		w := &ws[i]
		w.lat = make([]time.Duration, 0, 1<<14)
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(deadline) {
					return
				}
				if err := fetch(ctx, clients[i], target); err != nil {
					w.bad++
					if w.err == nil {
						w.err = err
					}
					continue
				}
				w.ok++
				w.lat = append(w.lat, time.Since(t0))
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return loadResult{}, ctx.Err()
	}
	r := loadResult{seconds: time.Since(start).Seconds()}
	var all []time.Duration
	for _, w := range ws {
		r.ok += w.ok
		r.bad += w.bad
		all = append(all, w.lat...)
		if w.err != nil && r.errs == "" {
			r.errs = w.err.Error()
		}
	}
	r.p50, r.p99 = percentile(all, 0.50), percentile(all, 0.99)
	if r.bad > 0 {
		r.errs = fmt.Sprintf("%d bad, the first: %s", r.bad, r.errs)
	}
	return r, nil
}

// fetch makes one request and checks its answer: status 200 and exactly
// the origin's body length.
func fetch(ctx context.Context, c *http.Client, target string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "peerbench/1.0")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return fmt.Errorf("reading the body: %w", err)
	}
	if resp.StatusCode != http.StatusOK || n != bodyBytes {
		return fmt.Errorf("status %d, %d body bytes (want 200, %d)", resp.StatusCode, n, bodyBytes)
	}
	return nil
}

// percentile returns the q-quantile of ds (nearest rank), sorting ds.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(q*float64(len(ds))+0.5) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

// checkOnce makes one request in mode m through s, as a functional check
// before any measurement: a proxy that refuses or mangles is reported
// here, with its log.
func (e *env) checkOnce(ctx context.Context, s *setup, m mode) error {
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	target := "http://" + e.origin + benchPath
	tr.Proxy = http.ProxyURL(s.plain)
	if m.tls {
		target = "https://" + e.originTLS + benchPath
		tr.Proxy = http.ProxyURL(s.tls)
		tr.TLSClientConfig = &tls.Config{RootCAs: s.roots}
	}
	if err := fetch(ctx, &http.Client{Transport: tr, Timeout: 30 * time.Second}, target); err != nil {
		return fmt.Errorf("%s, %s: %w\n%s", s.name, m.name, err, s.proc.tail())
	}
	return nil
}

// originStats is the origin's count of benchmark responses and of the
// signed requests among them.
type originStats struct{ served, signed int64 }

// stats asks the origin directly (no proxy) for its counts.
func (e *env) stats(ctx context.Context) (originStats, error) {
	tr := &http.Transport{Proxy: nil}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, (&url.URL{Scheme: "http", Host: e.origin, Path: "/stats"}).String(), nil)
	if err != nil {
		return originStats{}, err
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return originStats{}, fmt.Errorf("origin stats: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if err != nil {
		return originStats{}, err
	}
	var st originStats
	if _, err := fmt.Sscanf(string(body), "served=%d signed=%d", &st.served, &st.signed); err != nil {
		return originStats{}, fmt.Errorf("origin stats %q: %w", body, err)
	}
	return st, nil
}

// settledStats returns the origin's counts once they stop moving: a load
// ends with requests in flight (wrk gives up on them), which a proxy may
// still forward; they must count in no run. It polls for at most 3 s; if
// the counts still move, the check of the run that follows says so.
func (e *env) settledStats(ctx context.Context) (originStats, error) {
	prev, err := e.stats(ctx)
	if err != nil {
		return prev, err
	}
	for range 60 {
		select {
		case <-ctx.Done():
			return prev, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		cur, err := e.stats(ctx)
		if err != nil || cur == prev {
			return cur, err
		}
		prev = cur
	}
	return prev, nil
}

// checkOrigin says what is wrong when the origin's counts over a run do
// not match the client's: every response the client got must have come
// from the origin (no cache), signed exactly when the setup signs.
func checkOrigin(s *setup, before, after originStats, r loadResult) error {
	served, signed := after.served-before.served, after.signed-before.signed
	var errs []error
	if served < r.ok {
		errs = append(errs, fmt.Errorf("the origin served %d responses, the client got %d: some did not come from it", served, r.ok))
	}
	if s.signs && signed < r.ok {
		errs = append(errs, fmt.Errorf("%d of %d requests reached the origin signed", signed, r.ok))
	}
	if !s.signs && signed > 0 {
		errs = append(errs, fmt.Errorf("%d requests reached the origin signed", signed))
	}
	return errors.Join(errs...)
}
