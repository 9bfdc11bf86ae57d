package policy

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/doccache"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/htmlmeta"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots/resolver"
	"github.com/robotsgate/robotsgate/rsl"
)

// The conformance tables (conformance_*_test.go): one per family of
// AI-usage signal, each case a reading of its text, named by the section
// it follows (a case that rests on a draft, a second-hand quote or
// robotsgate's own conservative choice says so in its name). Every case
// runs through the production judgement: Engine.Decide, the admission
// path every way in decides through, then, for an allowed request, the
// response judgement the relay, /explain and check make
// (ResponseJudge.JudgeResponse on the response's fields and HTML head) and
// Decision.ApplyResponse. docs/decisions.md carries the same tables for
// users.

// confCase is one reading: a site, a request, the origin's response, and
// the decision it must make.
type confCase struct {
	name string
	// robots is the site's robots.txt ("" allows everything); files are
	// its other documents by path (licences, tdmrep.json), in which
	// {origin} is the site's origin ("http://127.0.0.2:PORT") and {port}
	// its port.
	robots string
	files  map[string]string
	// target is the request's ("" is /page); purposes the client's (nil
	// is train-ai); licence what it declares for RSL terms; token that it
	// sends a licence token of its own.
	target   string
	purposes []string
	licence  rsl.Client
	token    bool
	// header are the response's fields (name, value, ...), html its body
	// (an HTML page whose head is read; Content-Type text/html then).
	header []string
	html   string
	// unstated is usage.rsl_unstated_usage ("" refuse); unknownAllow
	// usage.on_unknown: allow.
	unstated     config.RSLUnstated
	unknownAllow bool
	// want is the decision; why what its explanation must say ("" for
	// Allow).
	want Verdict
	why  string
}

// unavailable, as a file's body, makes the site answer 503 for it.
const unavailable = "!503"

// confSite is the loopback origin the cases are served from.
type confSite struct {
	origin origin.Origin
	files  atomic.Pointer[map[string]string]
}

func newConfSite(t *testing.T) *confSite {
	t.Helper()
	s := &confSite{}
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := (*s.files.Load())[r.URL.Path]
		switch {
		case !ok:
			http.NotFound(w, r)
		case body == unavailable:
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			io.WriteString(w, body)
		}
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	if s.origin, err = origin.Parse(srv.URL); err != nil {
		t.Fatal(err)
	}
	return s
}

// serve makes the site serve c's files, placeholders filled in.
func (s *confSite) serve(c *confCase) {
	fill := strings.NewReplacer("{origin}", s.origin.String(), "{port}", strings.TrimPrefix(s.origin.HostPort(), "127.0.0.2:")).Replace
	files := map[string]string{"/robots.txt": "User-agent: *\nAllow: /\n"}
	if c.robots != "" {
		files["/robots.txt"] = fill(c.robots)
	}
	for p, body := range c.files {
		files[p] = fill(body)
	}
	s.files.Store(&files)
}

// engine is a fresh Engine (nothing cached) configured as c says, with
// usage.scan_html on.
func (s *confSite) engine(t *testing.T, c *confCase) *Engine {
	t.Helper()
	guard := &egress.Guard{BlockPrivate: true, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}
	r, err := resolver.New(resolver.Config{DialContext: guard.DialContext, FetchTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	tdm, err := doccache.NewTDMRep(doccache.TDMRepConfig{Resolver: r})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tdm.Close)
	lic, err := doccache.NewRSL(doccache.RSLConfig{Resolver: r})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lic.Close)
	onUnknown := config.UsageUnknownRefuse
	if c.unknownAllow {
		onUnknown = config.UsageUnknownAllow
	}
	unstated := c.unstated
	if unstated == "" {
		unstated = config.RSLUnstatedRefuse
	}
	e, err := New(Config{Resolver: r, TDMRep: tdm, TDMUnknown: onUnknown, RSL: lic, LicenseServer: config.UsageUnknownRefuse,
		RSLUnstated: unstated, ScanHTML: true, StrictPaths: true})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// judge decides c's request, and judges the response when it is allowed.
func (s *confSite) judge(t *testing.T, c *confCase) Decision {
	t.Helper()
	s.serve(c)
	e := s.engine(t, c)
	target, purposes := c.target, c.purposes
	if target == "" {
		target = "/page"
	}
	if purposes == nil {
		purposes = []string{"train-ai"}
	}
	ctx := context.Background()
	d, err := e.Decide(ctx, Request{Origin: s.origin, Target: target, UserAgent: "Mozilla/5.0 (compatible; ExampleBot/1.0)",
		Client: Client{Mode: Enforce, Purposes: purposes, Licence: c.licence}, LicenseToken: c.token})
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != Allow || c.header == nil && c.html == "" {
		return d
	}
	h := http.Header{}
	for i := 0; i+1 < len(c.header); i += 2 {
		h.Add(c.header[i], s.fill(c.header[i+1]))
	}
	var head func() Head
	if c.html != "" {
		h.Set("Content-Type", "text/html")
		head = func() Head {
			hd, err := htmlmeta.ScanHead(strings.NewReader(s.fill(c.html)), htmlmeta.Limit)
			if err != nil || !hd.Complete {
				return Head{Unscanned: "the head does not end within the limit"}
			}
			return Head{Head: hd}
		}
	}
	j, err := d.ResponseJudge().JudgeResponse(ctx, h, head)
	if err != nil {
		t.Fatal(err)
	}
	d.ApplyResponse(j, http.StatusOK)
	return d
}

func (s *confSite) fill(v string) string {
	return strings.ReplaceAll(v, "{origin}", s.origin.String())
}

// explanation is what a decision says of why it refused.
func explanation(d *Decision) string {
	switch {
	case d.Licence != nil:
		return d.Licence.Explain()
	case d.Response != nil:
		return d.Response.Signal.Explain()
	}
	return d.Note
}

// runConformance runs a table, each case as a subtest named by it.
func runConformance(t *testing.T, cases []confCase) {
	site := newConfSite(t)
	for i := range cases {
		c := &cases[i]
		t.Run(c.name, func(t *testing.T) {
			d := site.judge(t, c)
			why := explanation(&d)
			if d.Verdict != c.want || !strings.Contains(why, c.why) {
				t.Errorf("verdict %v (%s), want %v naming %q", d.Verdict, why, c.want, c.why)
			}
		})
	}
}
