// Package admin is robotsgate's admin listener: /metrics, /healthz,
// /readyz, /explain and the status page. It renders what its Source (the
// proxy) tells it and decides nothing itself: /explain's decision comes
// from the proxy's one admission path.
//
// It also keeps the status page's counters (Stats: per origin, per
// decision, the latest refusals and upstream failures, the last reload),
// which the proxy feeds with each request's audit record and reads back
// into Status, and the counts of clients' failed TLS handshakes
// (TLSFailures): what the page shows and what counts it live together.
//
// It must not import the proxy: the proxy implements Source and serves this
// package's handler.
package admin

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/botauth"
	"github.com/robotsgate/robotsgate/policy"
)

// Source is what the admin listener shows.
type Source interface {
	// Metrics serves the Prometheus registry.
	Metrics() http.Handler
	// Ready says why the proxy is not ready to serve, nil when it is.
	Ready(ctx context.Context) error
	// Explain answers /explain: the decision on q's URL, and the HTTP
	// status to send it with.
	Explain(ctx context.Context, q Query) (Explanation, int)
	// Status is what the status page shows at now.
	Status(now time.Time) Status
}

// Refresher is a Source that can fetch what it knows of an origin again
// (robots.txt, tdmrep.json) and end its pause: an operator's action.
type Refresher interface {
	// Refresh refreshes the origin of rawURL for the operator by (an
	// address, a user); the error is an invalid or refused origin.
	Refresh(ctx context.Context, rawURL, by string) (Refreshed, error)
}

// KeyPublisher is a Source that signs requests for Web Bot Auth and
// publishes what verifiers fetch: the key directory and the signature
// agent card, nil when signing is not configured.
type KeyPublisher interface {
	// KeyDirectory is the JSON Web Key Set of the gateway's signing key
	// and the header fields that sign it at now (Content-Digest,
	// Signature-Input, Signature), served with it.
	KeyDirectory(now time.Time) ([]byte, http.Header)
	// SignatureAgentCard is the signature agent card.
	SignatureAgentCard() []byte
}

// PACSource is a Source that writes the proxy auto-config file browsers
// fetch from /proxy.pac.
type PACSource interface {
	// PAC returns the file for a request that reached the admin listener
	// by host (its Host header, without the port), or why it cannot.
	PAC(host string) ([]byte, error)
}

// pacPath is where the PAC file is served; pacType is its media type
// (Netscape's, which browsers expect).
const (
	pacPath = "/proxy.pac"
	pacType = "application/x-ns-proxy-autoconfig"
)

// Options are how the admin listener protects itself.
type Options struct {
	// Log receives the status page's rendering errors.
	Log *slog.Logger
	// Hosts are names the listener answers to besides its own address
	// (and localhost, on loopback): a request naming another Host gets
	// 421.
	Hosts []string
	// Authenticate, when set, is asked for every request's Basic
	// credentials; without valid ones the answer is 401.
	Authenticate func(user, password string) bool
}

// Handler serves the admin endpoints of src: /metrics (Prometheus),
// /healthz, /readyz, /explain and the status page at /. Serve it on a
// separate, loopback address: it shows the configuration and traffic.
// /explain fetches a page only on a POST from the status page's own
// origin (or a client that is no browser), never on a GET: a link on
// another site must not make the proxy contact origins.
func Handler(src Source, opts Options) http.Handler {
	h := &handler{src: src, opts: opts}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", src.Metrics())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", h.readyz)
	mux.HandleFunc("GET /explain", h.explain)
	mux.HandleFunc("POST /explain", h.explain)
	mux.HandleFunc("GET /{$}", h.statusPage)
	if _, ok := src.(Refresher); ok {
		mux.HandleFunc("POST /refresh", h.refresh)
	}
	if ps, ok := src.(PACSource); ok {
		mux.HandleFunc("GET "+pacPath, servePAC(ps))
	}
	if kp, ok := src.(KeyPublisher); ok {
		// For operators who publish the key directory from here (behind
		// their https name): its well-known path, and the card.
		mux.HandleFunc("GET "+botauth.WellKnownPath, publish(func() ([]byte, http.Header) { return kp.KeyDirectory(time.Now()) }, botauth.MediaType))
		mux.HandleFunc("GET /signature-agent-card", publish(func() ([]byte, http.Header) { return kp.SignatureAgentCard(), nil }, "application/json"))
	}
	return h.guard(mux)
}

// servePAC serves the PAC file. Browsers fetch it without credentials,
// so it is the one path admin_auth does not cover (guard): it tells only
// what every client configured with it learns, the proxy's address and
// the hosts reached without it.
func servePAC(ps PACSource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		body, err := ps.PAC(strings.Trim(host, "[]"))
		if err != nil {
			http.Error(w, "500 Internal Server Error: "+err.Error()+"\n", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", pacType)
		w.Header().Set("Cache-Control", "max-age=300")
		w.Write(body)
	}
}

// publish serves what doc returns with contentType and the header fields
// it returns (the directory's signature), 404 when it returns nil (signing
// is not configured). The body goes out byte for byte: its Content-Digest
// covers it.
func publish(doc func() ([]byte, http.Header), contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		body, h := doc()
		if body == nil {
			http.Error(w, "404 Not Found: no Web Bot Auth signing is configured (bot_auth.signature_agent)\n", http.StatusNotFound)
			return
		}
		for k, v := range h {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "max-age=300")
		w.Write(body)
	}
}

type handler struct {
	src  Source
	opts Options
}

// guard answers only requests that name this listener in their Host (DNS
// rebinding: a page of attacker.example resolving to 127.0.0.1 sends Host:
// attacker.example) and, with Authenticate, that carry valid credentials.
// Every answer carries X-Content-Type-Options: nosniff.
func (h *handler) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if !h.namesUs(r) {
			http.Error(w, "421 Misdirected Request: this is robotsgate's admin listener, which answers only to its own address\n",
				http.StatusMisdirectedRequest)
			return
		}
		if h.opts.Authenticate != nil && r.URL.Path != pacPath {
			user, pass, ok := r.BasicAuth()
			if !ok || !h.opts.Authenticate(user, pass) {
				w.Header().Set("WWW-Authenticate", `Basic realm="robotsgate admin"`)
				http.Error(w, "401 Unauthorized\n", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// namesUs reports whether r's Host is the address the request came in on,
// localhost (or a loopback address) at that port when that address is
// loopback, or one of opts.Hosts.
func (h *handler) namesUs(r *http.Request) bool {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		host, port = r.Host, ""
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	for _, name := range h.opts.Hosts {
		if ok, _ := path.Match(name, host); ok {
			return true
		}
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	ap, err := netip.ParseAddrPort(local.String())
	if err != nil || port != strconv.Itoa(int(ap.Port())) {
		return false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap() == ap.Addr().Unmap() || ip.IsLoopback() && ap.Addr().IsLoopback()
	}
	return host == "localhost" && ap.Addr().IsLoopback()
}

// readyzTimeout bounds the readiness check (the shared store's answer).
const readyzTimeout = 2 * time.Second

// ReadyNoter is a Source whose /readyz answer, ready or not, goes on with
// lines of its own (which Redis node the instance uses, its last
// failover).
type ReadyNoter interface {
	ReadyNotes() []string
}

func (h *handler) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyzTimeout)
	defer cancel()
	var notes string
	if n, ok := h.src.(ReadyNoter); ok {
		for _, line := range n.ReadyNotes() {
			notes += line + "\n"
		}
	}
	if err := h.src.Ready(ctx); err != nil {
		http.Error(w, "not ready: "+err.Error()+"\n"+notes, http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte("ready\n" + notes))
}

// Query is an /explain question: the URL, as which client and agent, and
// whether to fetch the page.
type Query struct {
	URL string
	// UserAgent is the User-Agent header the request would carry
	// (ua=, else agent=).
	UserAgent string
	// Client and User identify the client by the clients entries
	// (client=IP, user=NAME); both zero: the default client.
	Client netip.Addr
	User   string
	// Purposes (purposes=, comma-separated) replace the client's; nil
	// when not given.
	Purposes []string
	// Fetch requests the page to judge its response (fetch=1).
	Fetch bool
	// By is the asker's address, for the audit record of a fetch.
	By string
}

// refresh answers POST /refresh (origin=URL): the origin's robots.txt and
// tdmrep.json are fetched again and its pause ended. Like a fetch to
// explain, it is done only for a POST from this listener's own pages or a
// client that is no browser.
func (h *handler) refresh(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !sameOrigin(r) {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "a refresh needs a POST from this listener's own pages or a client that is no browser"})
		return
	}
	by := r.RemoteAddr
	if user, _, ok := r.BasicAuth(); ok {
		by = user + " from " + by
	}
	res, err := h.src.(Refresher).Refresh(r.Context(), r.FormValue("origin"), by)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// writeJSON writes v as the JSON answer with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// sameOrigin reports whether a POST comes from a page of this listener, or
// from a client that is no browser: browsers say where a request comes
// from (Sec-Fetch-Site, Origin), other clients cannot be led by a page.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return true
	case "":
	default:
		return false
	}
	origin := r.Header.Get("Origin")
	return origin == "" || origin == "http://"+r.Host || origin == "https://"+r.Host
}

// parseQuery reads an /explain query.
func parseQuery(q url.Values, remoteAddr string) (Query, error) {
	x := Query{URL: q.Get("url"), UserAgent: cmp.Or(q.Get("ua"), q.Get("agent")), User: q.Get("user"),
		Fetch: q.Get("fetch") == "1" || q.Get("fetch") == "true", By: remoteAddr}
	if q.Has("purposes") {
		x.Purposes = policy.ParsePurposes(q.Get("purposes"))
		if x.Purposes == nil {
			x.Purposes = []string{}
		}
	}
	if c := q.Get("client"); c != "" {
		addr, err := netip.ParseAddr(c)
		if err != nil {
			return Query{}, fmt.Errorf("client=%q: not an IP address", c)
		}
		x.Client = addr
	}
	if x.URL == "" {
		return Query{}, fmt.Errorf("missing url parameter (and agent= or ua=, client=, user=, purposes=, fetch=1)")
	}
	return x, nil
}

func (h *handler) explain(w http.ResponseWriter, r *http.Request) {
	var e Explanation
	status := http.StatusBadRequest
	values := r.URL.Query()
	if r.Method == http.MethodPost {
		if err := r.ParseForm(); err == nil {
			values = r.Form
		}
	}
	q, err := parseQuery(values, r.RemoteAddr)
	switch {
	case err != nil:
	case q.Fetch && r.Method != http.MethodPost:
		err = errors.New("fetch=1 needs a POST (the status page's form): a GET never makes the proxy contact an origin")
	case q.Fetch && !sameOrigin(r):
		err = errors.New("fetch=1 is accepted only from the status page's own origin")
		status = http.StatusForbidden
	}
	if err != nil {
		e = Explanation{URL: r.URL.Query().Get("url"), Error: err.Error(), UsageSignals: e.UsageSignals}
	} else {
		e, status = h.src.Explain(r.Context(), q)
	}
	if e.UsageSignals == nil {
		e.UsageSignals = emptySignals
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(e)
}

func (h *handler) statusPage(w http.ResponseWriter, r *http.Request) {
	v := h.src.Status(time.Now())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", statusCSP)
	if err := statusTemplate.Execute(w, v); err != nil && h.opts.Log != nil {
		h.opts.Log.Error("status page", "err", err)
	}
}

// statusCSP lets the status page use its inline style sheet and SVG, post
// its explain form to itself, and nothing else: no script, no frame, no
// load from elsewhere.
const statusCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// The status page and its style sheet, inlined into the page (one request,
// no JavaScript).
var (
	//go:embed status.html
	statusHTML string
	//go:embed status.css
	statusCSS string
)

var statusTemplate = template.Must(template.New("status").Funcs(template.FuncMap{
	"css":      func() template.CSS { return template.CSS(statusCSS) },
	"ago":      func(t, now time.Time) string { return FormatAge(now.Sub(t)) },
	"at":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 MST") },
	"dur":      FormatDuration,
	"ms":       func(ms float64) string { return FormatDuration(time.Duration(ms * float64(time.Millisecond))) },
	"target":   recordTarget,
	"upper":    strings.ToUpper,
	"minutes":  func() int { return SparkMinutes },
	"statusOf": statusText,
}).Parse(statusHTML))

// FormatDuration rounds a duration for people: "250 ms" under a second,
// then seconds with three significant digits ("1.00 s", "12.5 s"), whole
// seconds from 100 s.
func FormatDuration(d time.Duration) string {
	if r := d.Round(time.Millisecond); r < time.Second {
		return fmt.Sprintf("%d ms", max(r, 0)/time.Millisecond)
	}
	switch sec := d.Seconds(); {
	case sec < 9.995:
		return fmt.Sprintf("%.2f s", sec)
	case sec < 99.95:
		return fmt.Sprintf("%.1f s", sec)
	default:
		return fmt.Sprintf("%.0f s", sec)
	}
}

// FormatAge rounds how long ago something was to its two largest units:
// "12 s", "3 min 5 s", "2 h 10 min", "3 d 4 h".
func FormatAge(d time.Duration) string {
	d = max(d.Round(time.Second), 0)
	const day = 24 * time.Hour
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", d/time.Second)
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", d/time.Minute, d%time.Minute/time.Second)
	case d < day:
		return fmt.Sprintf("%d h %d min", d/time.Hour, d%time.Hour/time.Minute)
	}
	return fmt.Sprintf("%d d %d h", d/day, d%day/time.Hour)
}

// statusText is a decision's status code, "none" when nothing is sent.
func statusText(code int) string {
	if code == 0 {
		return "none"
	}
	return strconv.Itoa(code)
}
